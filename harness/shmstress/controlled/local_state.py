"""Resetting a tracker's process-local Python state between executions, without re-forking.

Shared arrays are restored byte for byte by the coordinator, but a tracker
object also keeps plain Python state in each process (a last-seen revision,
a cursor). Each execution works on a deep copy of the pristine tracker in
which everything that is shared (arrays, instrumented locks, the runtime,
process-shared primitives, views of shared memory) is kept by identity, so
the copy sees the same shared memory and starts from the same local state.

The copy is made at the start of every execution, so its cost is paid per
execution: ``copy.deepcopy`` walks the object graph in Python. The pristine
tracker is therefore pickled once, with every shared object kept out of the
image by a persistent id, and each execution unpickles that image (C code,
a C call back per shared object): the same graph, in about half the time on
the DRA tracker (30-35 us against 65-100 us with warm caches; the gap narrows
when the caches are cold, as they are between executions).
Where the graph cannot be pickled, or holds an object whose own
``__deepcopy__`` might copy it otherwise than pickle would, deepcopy stays.

Cheaper still, where the graph allows it (the DRA tracker's does): when every
object of its local state is a plain Python object (attributes in its
``__dict__``, no slots, no copying or pickling hooks of its own) and every
value in it is such an object, a shared one, an immutable atom (a number, a
string, None, an enum member), a tuple of these or a method bound to one,
nothing but those ``__dict__``s can change during an execution. Each is then
restored in place from a copy made once, and the same graph is handed out
again: a few microseconds where unpickling took 30-100 per worker and
execution. It is the graph a fresh copy would be, with the same identities
every time.
"""

from __future__ import annotations

import copy
import enum
import io
import mmap
import pickle
import types
from collections.abc import Iterator
from multiprocessing.connection import Connection
from multiprocessing.synchronize import SemLock
from typing import Any, Generic, TypeVar

import numpy as np

from shmstress.core.control import ControlBlock
from shmstress.core.locks import InstrumentedLock
from shmstress.core.runtime import Runtime
from shmstress.core.shm import Arena, SharedArray
from shmstress.plugin.setup import Ghost, Setup
from shmstress.record.recorder import Recorder

_T = TypeVar("_T")

_SHARED_TYPES = (
    SharedArray, InstrumentedLock, Runtime, ControlBlock, Arena, Recorder, SemLock, Connection,
    Ghost, Setup, memoryview, mmap.mmap, types.ModuleType, type,
)


def _is_shared(obj: object) -> bool:
    if isinstance(obj, _SHARED_TYPES):
        return True
    return isinstance(obj, np.ndarray) and obj.base is not None  # a view, e.g. of a segment


def _children(obj: object) -> Iterator[object]:
    if isinstance(obj, dict):
        yield from obj.values()
    elif isinstance(obj, (list, tuple, set, frozenset)):
        yield from obj
    elif isinstance(obj, types.MethodType):
        yield obj.__self__
    else:
        attributes = getattr(obj, "__dict__", None)
        if isinstance(attributes, dict):
            yield from attributes.values()
        for name in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, name):
                yield getattr(obj, name)
        if hasattr(obj, "__iter__") and type(obj).__module__ == "collections":
            yield from obj


def _reachable(obj: object) -> Iterator[object]:
    """Every object reachable from ``obj``, once each; shared objects are not looked into."""
    seen: set[int] = set()
    stack: list[object] = [obj]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        if not _is_shared(item):
            stack.extend(_children(item))


def lock_names(obj: object) -> dict[int, str]:
    """Slot -> name of every instrumented lock reachable from ``obj`` (for deadlock reports)."""
    return {item.slot: item.name for item in _reachable(obj)
            if isinstance(item, InstrumentedLock)}


class Pristine(Generic[_T]):
    """Hands out fresh copies of ``obj`` that share its shared memory but not its local state.

    A copy is good until the next ``fresh()``: restored in place, the next one is the same
    objects again."""

    def __init__(self, obj: _T) -> None:
        self._obj = obj
        reachable = list(_reachable(obj))
        self._keep = {id(item): item for item in reachable if _is_shared(item)}
        self.in_place = _attributes(reachable)
        """Each object of the local state with its attributes as they were at the start
        (None: the graph holds something that must be copied, see the module docstring)."""
        self.image = (None if self.in_place is not None
                      else _image(obj, self._keep) if _picklable_alike(reachable) else None)
        """The pickled local state every copy is loaded from (None: restored in place, or
        deepcopy makes the copies)."""

    def fresh(self) -> _T:
        if self.in_place is not None:
            for item, attributes in self.in_place:
                state = item.__dict__
                state.clear()
                state.update(attributes)
            return self._obj
        if self.image is not None:
            loader = pickle.Unpickler(io.BytesIO(self.image))
            loader.persistent_load = self._keep.__getitem__  # type: ignore[method-assign]
            fresh: _T = loader.load()  # a C call per shared object, no Python frame
            return fresh
        return copy.deepcopy(self._obj, dict(self._keep))


_ATOMS = (int, float, complex, str, bytes, type(None), enum.Enum, types.MethodType, tuple,
          frozenset)
"""Values a run cannot change (a tuple's, a frozenset's items and a bound method's object are
reachable objects of their own, checked in turn)."""
_PLAIN_OBJECT = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class statement's, not a C type's
_HOOKS = ("__slots__", "__deepcopy__", "__copy__", "__reduce__", "__reduce_ex__",
          "__getstate__", "__setstate__", "__getnewargs__", "__getnewargs_ex__")


def _attributes(reachable: list[object]) -> list[tuple[Any, dict[str, object]]] | None:
    """Every plain object of the local state with a copy of its ``__dict__``, if nothing else
    in it can change: shared objects and atoms aside, only plain objects (a class statement's,
    no slots, no hooks that copy or pickle it its own way, nor a C base but ``object``)."""
    restored: list[tuple[Any, dict[str, object]]] = []
    for item in reachable:
        if _is_shared(item) or isinstance(item, _ATOMS):
            continue
        if not all(cls is object or (cls.__flags__ & _PLAIN_OBJECT
                                     and not any(hook in cls.__dict__ for hook in _HOOKS))
                   for cls in type(item).__mro__):
            return None
        attributes = getattr(item, "__dict__", None)
        if type(attributes) is not dict:
            return None
        restored.append((item, dict(attributes)))
    return restored


_SAME_COPY = (enum.Enum, np.ndarray)
"""Types whose ``__deepcopy__`` makes what unpickling makes (the member itself; an array
with the same contents)."""


def _picklable_alike(reachable: list[object]) -> bool:
    """Would unpickling give what deepcopy gives? Not if an object copies itself its own way."""
    for item in reachable:
        if (not _is_shared(item) and hasattr(type(item), "__deepcopy__")
                and not isinstance(item, _SAME_COPY)):
            return False
    return True


class _Dumper(pickle.Pickler):
    """Pickles everything but the shared objects, which go by their id."""

    def __init__(self, file: io.BytesIO, keep: dict[int, object]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._keep = keep

    def persistent_id(self, obj: object) -> int | None:
        key = id(obj)
        return key if key in self._keep else None


def _image(obj: object, keep: dict[int, object]) -> bytes | None:
    """The pickled local state of ``obj``, or None where something in it cannot be pickled
    (a lambda, a local class, an open file): deepcopy then makes every copy."""
    buffer = io.BytesIO()
    try:
        _Dumper(buffer, keep).dump(obj)
    except Exception:  # any pickling failure means: copy the slow way
        return None
    return buffer.getvalue()
