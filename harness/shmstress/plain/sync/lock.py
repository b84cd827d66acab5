"""``multiprocessing.Lock`` and ``RLock``: an owner, a depth, a point at each acquire and release.

An acquire parks until the lock is free (or, for an ``RLock``, already this
process's), so a waiter is always "blocked on lock X held by Y". Like the real
ones, a ``Lock`` may be released by any process and a released ``Lock``
released again raises ``ValueError``; an ``RLock`` only by its owner.
"""

from __future__ import annotations

from types import TracebackType

from shmstress.plain.board import NOBODY, O_COUNT, O_OWNER, Kind, Wait
from shmstress.plain.sync.base import Primitive

PLUMBING = True


class Lock(Primitive):
    _kind = Kind.LOCK
    _word = "lock"

    def __init__(self, *, ctx: object = None) -> None:
        super().__init__()

    def acquire(self, block: bool = True, timeout: float | None = None) -> bool:
        runtime = self._runtime
        if not block:
            runtime.point(f"try to acquire {self.name}")
            return self._take()
        runtime.point(f"acquire {self.name}", Wait.LOCK, self._obj, timeout=timeout)
        if self._take():
            return True
        if not runtime.scheduled:
            raise RuntimeError(f"shmstress: {self.name} is held while the scenario's module is "
                               "imported; an acquire there would wait forever")
        runtime.yielded = 1  # timed out: the caller will likely retry
        return False

    def release(self) -> None:
        self._runtime.point(f"release {self.name}")
        self._give()

    __enter__ = acquire

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

    # -- transitions (the caller holds the step) --------------------------------------------
    def _take(self) -> bool:
        owner = self._get(O_OWNER)
        if owner == NOBODY:
            self._set(O_OWNER, self._me())
            self._set(O_COUNT, 1)
            return True
        if self._kind == Kind.RLOCK and owner == self._me():
            self._set(O_COUNT, self._get(O_COUNT) + 1)
            return True
        return False

    def _give(self) -> None:
        owner = self._get(O_OWNER)
        if self._kind == Kind.RLOCK and owner != self._me():
            raise AssertionError("attempt to release recursive lock not owned by thread")
        if owner == NOBODY:
            raise ValueError("semaphore or lock released too many times")
        depth = self._get(O_COUNT) - 1
        self._set(O_COUNT, depth)
        if depth <= 0:
            self._set(O_COUNT, 0)
            self._set(O_OWNER, NOBODY)
            self._runtime.wake()

    def _is_mine(self) -> bool:
        return self._get(O_OWNER) == self._me()

    def _release_all(self) -> int:
        """Give the lock up whatever its depth (a condition's wait); returns the depth."""
        depth = self._get(O_COUNT)
        self._set(O_COUNT, 0)
        self._set(O_OWNER, NOBODY)
        self._runtime.wake()
        return depth

    def _restore(self, depth: int) -> None:
        self._set(O_OWNER, self._me())
        self._set(O_COUNT, depth)


class RLock(Lock):
    _kind = Kind.RLOCK
    _word = "rlock"
