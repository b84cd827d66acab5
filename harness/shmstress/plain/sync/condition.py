"""``multiprocessing.Condition``: a queue of waiters in front of a lock.

``wait`` is three steps: release the lock and join the queue; be notified (or,
with a timeout, give up); take the lock back. ``notify`` wakes the oldest
waiters, as the real one does. A notify with nobody waiting is lost, so a
waiter that arrives after it waits forever: the coordinator reports that as no
progress, naming the condition.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

from shmstress.plain.board import (
    G_TICKETS,
    NOBODY,
    P_COND,
    P_NOTIFIED,
    P_STATE,
    P_STRIDE,
    P_TICKET,
    Kind,
    State,
    Wait,
)
from shmstress.plain.sync.base import Primitive
from shmstress.plain.sync.lock import Lock

PLUMBING = True
T = TypeVar("T")


class Condition(Primitive):
    _kind = Kind.CONDITION
    _word = "condition"
    _new_lock: Callable[[], Lock]

    def __init__(self, lock: Lock | None = None, *, ctx: object = None) -> None:
        super().__init__()
        self._lock = lock if lock is not None else self._new_lock()

    def acquire(self, block: bool = True, timeout: float | None = None) -> bool:
        return self._lock.acquire(block, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        runtime = self._runtime
        if not runtime.scheduled:
            raise RuntimeError(f"shmstress: {self.name} is waited on while the scenario's "
                               "module is imported; the wait would last forever")
        if not self._lock._is_mine():
            raise AssertionError("must acquire() condition before using wait()")
        runtime.point(f"wait on {self.name}")
        depth = self._lock._release_all()
        slots = runtime.board.slots.mv
        base = runtime.slot * P_STRIDE
        globals_ = runtime.board.globals.mv
        slots[base + P_COND] = self._obj
        slots[base + P_TICKET] = globals_[G_TICKETS]
        globals_[G_TICKETS] += 1
        slots[base + P_NOTIFIED] = 0
        runtime.point(f"wake on {self.name}", Wait.NOTIFY, self._obj, timeout=timeout)
        notified = bool(slots[base + P_NOTIFIED])
        slots[base + P_COND] = NOBODY
        slots[base + P_NOTIFIED] = 0
        if not notified:
            runtime.yielded = 1
        runtime.point(f"take {self._lock.name} back", Wait.LOCK, self._lock._obj)
        self._lock._restore(depth)
        return notified

    def wait_for(self, predicate: Callable[[], T], timeout: float | None = None) -> T:
        result = predicate()
        while not result:
            if not self.wait(timeout) and timeout is not None:
                return predicate()
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        runtime = self._runtime
        if not self._lock._is_mine():
            raise AssertionError("lock is not owned")
        runtime.point(f"notify {self.name}")
        board = runtime.board
        slots = board.slots.mv
        waiting = sorted(
            (slots[slot * P_STRIDE + P_TICKET], slot)
            for slot in range(board.max_slots)
            if slots[slot * P_STRIDE + P_COND] == self._obj
            and slots[slot * P_STRIDE + P_STATE] != State.UNUSED
            and not slots[slot * P_STRIDE + P_NOTIFIED]
        )
        for _, slot in waiting[:n]:
            slots[slot * P_STRIDE + P_NOTIFIED] = 1
            slots[slot * P_STRIDE + P_COND] = NOBODY
        if waiting:
            runtime.wake()

    def notify_all(self) -> None:
        self.notify(1 << 30)
