"""The class under test as its own sequential model, when the user gives no model class.

The linearizability search copies a model's state before each operation it tries and keys
its cache by that state (``analysis.linearizability``: ``copy.deepcopy``, pickling). An
object made of shared memory allows neither: a synchronized ``Value`` refuses to be pickled
outside a process start, a ``SharedMemory`` segment would be shared, not copied. So the
model here is the sequence of calls made so far: a copy is a new sequence, and the object
it stands for is made afresh and the calls replayed on it the first time it is asked
something. Its state key is what its shared memory holds after them (the bytes of every
``Value``, ``Array`` and segment it keeps, and the pickle of its other attributes), so two
orders that leave equal memory meet in the cache as they would for a plain model.
"""

from __future__ import annotations

import contextlib
import ctypes
import pickle
from collections.abc import Callable, Hashable
from multiprocessing import shared_memory
from typing import Any


class SequentialModel:
    """``factory()``'s object after ``calls``, made when first needed."""

    def __init__(self, factory: Callable[[], Any],
                 calls: tuple[tuple[str, tuple[Any, ...]], ...] = ()) -> None:
        self._factory = factory
        self._calls = calls
        self._live: Any = None

    def __deepcopy__(self, memo: dict[int, Any]) -> SequentialModel:
        return SequentialModel(self._factory, self._calls)

    def __shmstress_state__(self) -> Hashable:
        return state_of(self._object())

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        method = getattr(self._object(), name)

        def call(*args: Any) -> Any:
            self._calls += ((name, args),)
            return method(*args)

        return call

    def _object(self) -> Any:
        if self._live is None:
            live = self._factory()
            for name, args in self._calls:
                with contextlib.suppress(Exception):  # it raised the first time too
                    getattr(live, name)(*args)
            self._live = live
        return self._live


def state_of(obj: Any) -> Hashable:
    """What ``obj`` holds, as a key: its ``__shmstress_state__()`` if it has one."""
    custom = getattr(obj, "__shmstress_state__", None)
    if custom is not None:
        return custom()  # type: ignore[no-any-return]
    return tuple((name, _held(value)) for name, value in sorted(vars(obj).items()))


def _held(value: Any) -> Hashable:
    if isinstance(value, shared_memory.SharedMemory):
        return bytes(value.buf or b"")
    inner = getattr(value, "get_obj", None)  # a synchronized Value or Array
    if inner is not None:
        value = inner()
    if isinstance(value, ctypes._SimpleCData | ctypes.Array | ctypes.Structure):
        return bytes(memoryview(value).cast("B"))
    if callable(getattr(value, "acquire", None)) and callable(getattr(value, "release", None)):
        return "lock"  # a lock the sequential model is never left holding
    try:
        return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    except Exception:
        return f"{type(value).__qualname__}"
