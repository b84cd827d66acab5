"""Resetting a tracker's process-local Python state between executions, without re-forking.

Shared arrays are restored byte for byte by the coordinator, but a tracker
object also keeps plain Python state in each process (a last-seen revision,
a cursor). Each execution works on a deep copy of the pristine tracker in
which everything that is shared (arrays, instrumented locks, the runtime,
process-shared primitives, views of shared memory) is kept by identity, so
the copy sees the same shared memory and starts from the same local state.
"""

from __future__ import annotations

import copy
import mmap
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
        self._keep = {id(item): item for item in _reachable(obj) if _is_shared(item)}

    def fresh(self) -> _T:
        return copy.deepcopy(self._obj, dict(self._keep))
