"""``Value``, ``Array``, ``RawValue`` and ``RawArray`` whose reads and writes are points.

The shared data lives where ``multiprocessing`` puts it (its heap of shared
mappings); what changes is the ctypes type: a subclass whose ``.value`` (or
item access) takes a point, records what it read or wrote, and then does the
access. Being a ctypes object still, it keeps the buffer protocol, so a numpy
view over it works, though its element accesses are not points (``--trace``).

A synchronized ``Value`` reads and writes under its lock as the real one does:
the access waits while another process holds the lock (``with v.get_lock():``
in another process blocks it), and, the lock being an ``RLock`` by default,
goes on when this process holds it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from multiprocessing import sharedctypes
from types import TracebackType
from typing import Any, ClassVar, NoReturn

from shmstress.plain.board import NOBODY, Kind, Wait
from shmstress.plain.runtime import PlainRuntime
from shmstress.plain.sync.base import Primitive, inherited_only
from shmstress.plain.sync.lock import Lock

PLUMBING = True

_new_value: Any = getattr(sharedctypes, "_new_value")  # noqa: B009 - the real allocator
_TYPECODES: dict[str, Any] = dict(getattr(sharedctypes, "typecode_to_type"))  # noqa: B009


class _Traced:
    """Per-object facts of a traced ctypes object, kept on the object itself."""

    _shm_runtime: ClassVar[PlainRuntime]
    _shm_name: str
    _shm_wait: Wait
    _shm_lock: int
    _shm_keep: object  # the untraced object that owns the memory


def _read_value(self: Any) -> Any:
    runtime = self._shm_runtime
    step = runtime.point(f"read {self._shm_name}.value", self._shm_wait, self._shm_lock)
    value = self._shm_base.value.__get__(self)
    runtime.note(step, value)
    return value


def _write_value(self: Any, value: Any) -> None:
    runtime = self._shm_runtime
    step = runtime.point(f"write {self._shm_name}.value", self._shm_wait, self._shm_lock)
    self._shm_base.value.__set__(self, value)
    runtime.note(step, value)


def _get_item(self: Any, index: Any) -> Any:
    runtime = self._shm_runtime
    step = runtime.point(f"read {self._shm_name}[]", self._shm_wait, self._shm_lock)
    value = self._shm_base.__getitem__(self, index)
    runtime.note(step, value, index if isinstance(index, int) else -1)
    return value


def _set_item(self: Any, index: Any, value: Any) -> None:
    runtime = self._shm_runtime
    step = runtime.point(f"write {self._shm_name}[]", self._shm_wait, self._shm_lock)
    self._shm_base.__setitem__(self, index, value)
    runtime.note(step, value, index if isinstance(index, int) else -1)


def _inherited_only(self: Any) -> NoReturn:
    inherited_only(self._shm_base.__name__)


class SharedData:
    """The factories patched into ``multiprocessing.sharedctypes`` for one runtime."""

    def __init__(self, runtime: PlainRuntime, rlock: type[Lock]) -> None:
        self._runtime = runtime
        self._rlock = rlock
        self._types: dict[Any, Any] = {}

    def _traced_type(self, base: Any) -> Any:
        found = self._types.get(base)
        if found is None:
            namespace: dict[str, Any] = {"_shm_runtime": self._runtime, "_shm_base": base,
                                         "__reduce__": _inherited_only}
            if issubclass(base, ctypes.Array):
                namespace.update(__getitem__=_get_item, __setitem__=_set_item)
            elif hasattr(base, "_type_") and isinstance(base._type_, str):
                namespace["value"] = property(_read_value, _write_value)
            else:
                return None  # a Structure or pointer: shared, but its accesses are not points
            found = self._types[base] = type(f"Traced{base.__name__}", (base,), namespace)
        return found

    def _traced(self, plain: Any, kind: Kind, word: str) -> Any:
        """A traced view of the freshly made ctypes object ``plain``, named and registered
        (not yet exposed: a synchronized one's buffer is reached only through
        ``get_obj``)."""
        runtime = self._runtime
        obj, name = runtime.new_object(kind, word)
        runtime.register_buffer(ctypes.addressof(plain), ctypes.sizeof(plain),
                                runtime.memory_of(obj), name, exposed=False)
        traced_type = self._traced_type(type(plain))
        if traced_type is None:
            return plain
        traced = traced_type.from_buffer(plain)
        traced._shm_name = name
        traced._shm_wait = Wait.NOTHING
        traced._shm_lock = NOBODY
        traced._shm_keep = plain
        return traced

    # -- what multiprocessing.sharedctypes offers -------------------------------------------
    def _raw_value(self, typecode_or_type: Any, *args: Any) -> Any:
        base = _TYPECODES.get(typecode_or_type, typecode_or_type)
        plain = _new_value(base)
        ctypes.memset(ctypes.addressof(plain), 0, ctypes.sizeof(plain))
        plain.__init__(*args)
        return self._traced(plain, Kind.VALUE, "value")

    def _raw_array(self, typecode_or_type: Any, size_or_initializer: Any) -> Any:
        base = _TYPECODES.get(typecode_or_type, typecode_or_type)
        if isinstance(size_or_initializer, int):
            plain = _new_value(base * size_or_initializer)
            ctypes.memset(ctypes.addressof(plain), 0, ctypes.sizeof(plain))
        else:
            initial = list(size_or_initializer)
            plain = _new_value(base * len(initial))
            plain.__init__(*initial)
        return self._traced(plain, Kind.ARRAY, "array")

    def value(self, typecode_or_type: Any, *args: Any, lock: Any = True,
              ctx: object = None) -> Any:
        obj = self._raw_value(typecode_or_type, *args)
        return self._synchronized(obj, lock, SynchronizedValue)

    def array(self, typecode_or_type: Any, size_or_initializer: Any, *, lock: Any = True,
              ctx: object = None) -> Any:
        obj = self._raw_array(typecode_or_type, size_or_initializer)
        return self._synchronized(obj, lock, SynchronizedArray)

    def raw_value(self, typecode_or_type: Any, *args: Any) -> Any:
        self._runtime.expose()  # the ctypes object itself: numpy can view its buffer
        return self._raw_value(typecode_or_type, *args)

    def raw_array(self, typecode_or_type: Any, size_or_initializer: Any) -> Any:
        self._runtime.expose()
        return self._raw_array(typecode_or_type, size_or_initializer)

    def _synchronized(self, obj: Any, lock: Any, wrapper: type[Synchronized]) -> Any:
        if lock is False:
            self._runtime.expose()
            return obj
        if lock is True or lock is None:
            lock = self._rlock.__new__(self._rlock)
            Primitive.__init__(lock, name=f"{getattr(obj, '_shm_name', 'value')}.get_lock()")
        if not isinstance(lock, Lock):
            raise AttributeError(f"{lock!r} has no attribute 'acquire' shmstress can control")
        if hasattr(obj, "_shm_name"):
            obj._shm_wait = Wait.LOCK
            obj._shm_lock = lock._obj
        return wrapper(obj, lock)


class Synchronized:
    """What ``Value`` and ``Array`` return: the object and the lock that guards each access."""

    def __init__(self, obj: Any, lock: Lock) -> None:
        self._obj = obj
        self._lock = lock
        self.acquire = lock.acquire
        self.release = lock.release

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._lock.release()

    def get_obj(self) -> Any:
        runtime = getattr(self._obj, "_shm_runtime", None)
        if runtime is not None:  # its buffer is in the open now: numpy can view it
            runtime.expose()
        return self._obj

    def __reduce__(self) -> NoReturn:
        inherited_only("Synchronized")

    def get_lock(self) -> Lock:
        return self._lock

    def __repr__(self) -> str:
        return f"<{type(self).__name__} wrapper for {self._obj}>"


class SynchronizedValue(Synchronized):
    @property
    def value(self) -> Any:
        return self._obj.value

    @value.setter
    def value(self, value: Any) -> None:
        self._obj.value = value


class SynchronizedArray(Synchronized):
    def __len__(self) -> int:
        return len(self._obj)

    def __getitem__(self, index: Any) -> Any:
        return self._obj[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self._obj[index] = value

    def __iter__(self) -> Iterator[Any]:
        for index in range(len(self._obj)):
            yield self._obj[index]
