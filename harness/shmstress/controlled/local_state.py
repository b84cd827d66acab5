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
from typing import Generic, TypeVar

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
    """Hands out fresh copies of ``obj`` that share its shared memory but not its local state."""

    def __init__(self, obj: _T) -> None:
        self._obj = obj
        reachable = list(_reachable(obj))
        self._keep = {id(item): item for item in reachable if _is_shared(item)}
        self.image = _image(obj, self._keep) if _picklable_alike(reachable) else None
        """The pickled local state every copy is loaded from (None: deepcopy makes them)."""

    def fresh(self) -> _T:
        if self.image is not None:
            loader = pickle.Unpickler(io.BytesIO(self.image))
            loader.persistent_load = self._keep.__getitem__  # type: ignore[method-assign]
            fresh: _T = loader.load()  # a C call per shared object, no Python frame
            return fresh
        return copy.deepcopy(self._obj, dict(self._keep))


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
