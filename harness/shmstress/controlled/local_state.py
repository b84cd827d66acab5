"""Resetting a tracker's process-local Python state between executions, without re-forking.

Shared arrays are restored byte for byte by the coordinator, but a tracker
object also keeps plain Python state in each process (a last-seen revision,
a cursor). Each execution works on a deep copy of the pristine tracker in
which everything that is shared (arrays, instrumented locks, the runtime,
process-shared primitives, views of shared memory) is kept by identity, so
the copy sees the same shared memory and starts from the same local state.

The copy is made once per worker and execution, so its cost counts against
every execution: where the local state pickles (what trackers hold does) and
nothing in it copies itself its own way (``__deepcopy__``), the pristine state
is pickled once, shared objects by reference, and each copy is unpickled from
it, about three times faster than ``copy.deepcopy`` and the same copy (both
rebuild an object from its ``__reduce_ex__``, functions and classes by
identity). Otherwise every copy is a ``copy.deepcopy``.
"""

from __future__ import annotations

import copy
import io
import mmap
import pickle
import types
from collections.abc import Iterator
from multiprocessing.connection import Connection
from multiprocessing.synchronize import SemLock
from typing import Generic, TypeVar, cast

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


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, shared: dict[int, object]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._shared = shared

    def persistent_id(self, obj: object) -> int | None:
        key = id(obj)
        return key if key in self._shared else None


def _image(obj: object, shared: dict[int, object], local: list[object]) -> bytes | None:
    """``obj`` pickled with its shared objects by reference, or None where an unpickled copy
    might not be what ``copy.deepcopy`` makes."""
    if any(hasattr(item, "__deepcopy__") and not isinstance(item, np.ndarray)
           for item in local):
        return None
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, shared).dump(obj)
    except Exception:  # a lambda, a local class, an open file: deepcopy copes
        return None
    return buffer.getvalue()


class Pristine(Generic[_T]):
    """Hands out fresh copies of ``obj`` that share its shared memory but not its local state."""

    def __init__(self, obj: _T) -> None:
        self._obj = obj
        reachable = list(_reachable(obj))
        self._keep = {id(item): item for item in reachable if _is_shared(item)}
        self._image = _image(obj, self._keep,
                             [item for item in reachable if not _is_shared(item)])

    @property
    def pickled(self) -> bool:
        """Copies are unpickled from an image (else deep-copied)."""
        return self._image is not None

    def fresh(self) -> _T:
        if self._image is not None:
            unpickler = pickle.Unpickler(io.BytesIO(self._image))
            unpickler.persistent_load = self._keep.__getitem__  # type: ignore[method-assign]
            return cast(_T, unpickler.load())
        return copy.deepcopy(self._obj, dict(self._keep))
