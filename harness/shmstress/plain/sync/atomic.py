"""Compare-and-swap over shared memory with the ``atomics`` package: each operation a point.

A spin lock (or any lock-free protocol) over a segment or a mapping is built from an
``atomics.atomicview`` of a few of its bytes: ``cmpxchg_strong(0, 1)`` to take it,
``store(0)`` to give it back. Each operation of a view over a registered shared buffer
takes a point first, labelled with what it does (``load`` and ``store`` as a read and
a write of ``atomic[]``, the others by their name: ``cas atomic[]``,
``fetch_add atomic[]``), and records the value it saw (what a ``load`` read, what a
``store`` stored, what a compare-and-swap found, what a fetch returned) at the byte
offset in its buffer. A compare-and-swap that fails, and a load that sees what this
process's last load there saw, say the process waits for another (as a yield does): a
strategy then lets the holder run instead of granting the spin step after step. A view
of private memory takes no point. The package was chosen as the
maintained one on PyPI that works on any buffer (``atomics`` 1.0, over ``patomic``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from shmstress.plain.runtime import PlainRuntime

PLUMBING = True
_VERBS = {"load": "read", "store": "write", "cmpxchg_weak": "cas", "cmpxchg_strong": "cas"}
_OPERATIONS = ("load", "store", "exchange", "cmpxchg_weak", "cmpxchg_strong", "add", "sub",
               "inc", "dec", "neg", "fetch_add", "fetch_sub", "fetch_inc", "fetch_dec",
               "fetch_neg", "bin_or", "bin_xor", "bin_and", "bin_not", "bin_fetch_or",
               "bin_fetch_xor", "bin_fetch_and", "bin_fetch_not", "bit_test",
               "bit_test_set", "bit_test_reset", "bit_test_compl")


def patch_atomics(runtime: PlainRuntime, atomics: ModuleType) -> None:
    """Make the operations of ``atomics``' views points (its classes, changed in place)."""
    loaded: dict[int, object] = {}  # address -> what this process's last load there saw
    for view in _view_classes(atomics):
        for operation in _OPERATIONS:
            method = getattr(view, operation, None)
            if method is not None and not hasattr(method, "_shm_point"):
                setattr(view, operation, _point(runtime, operation, method, loaded))


def _view_classes(atomics: ModuleType) -> list[type]:
    """Every view class of the package: they all derive from its ``AtomicView``."""
    base = importlib.import_module(f"{atomics.__name__}._impl.atomic.base").AtomicView
    found: list[type] = []
    pending = list(base.__subclasses__())
    while pending:
        view = pending.pop()
        found.append(view)
        pending.extend(view.__subclasses__())
    return found


def _point(runtime: PlainRuntime, operation: str, method: Callable[..., Any],
           loaded: dict[int, object]) -> Callable[..., Any]:
    verb = _VERBS.get(operation, operation)

    @functools.wraps(method)
    def operate(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not runtime.scheduled:
            return method(self, *args, **kwargs)
        address = int(self._core.address)
        start = next((low for low, high in runtime.shared_ranges if low <= address < high), -1)
        if start < 0:
            return method(self, *args, **kwargs)
        step = runtime.point(f"{verb} atomic[]")
        result = method(self, *args, **kwargs)
        if verb == "cas":
            value, spins = result.expected, not result.success
        elif verb == "read":
            value, spins = result, loaded.get(address, loaded) == result
            loaded[address] = result
        else:
            value, spins = (args[0] if verb == "write" and args else result), False
        runtime.note(step, value if isinstance(value, int) else None, address - start)
        if spins:
            runtime.yielded = 1  # it waits for another process: that one should run
        return result

    operate._shm_point = True  # type: ignore[attr-defined]
    return operate
