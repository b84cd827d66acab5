"""Waits that a helper thread would end, ended by the waiting process itself.

The real ``Pool`` runs three threads in the process that made it (a task handler that
moves tasks into the workers' queue, a result handler that moves results onto their
``AsyncResult``s, a worker handler that replaces workers that exit), and the real
``ProcessPoolExecutor`` one (its manager). Under control none is started: their work is
folded into the steps of the process that caused it. Handing tasks over is part of
``apply_async``/``map_async``/``submit``; draining results is what waiting on a result
does (``AsyncResult.get``, ``Future.result``, ``as_completed``, ``Pool.join``), one
step a result, and a worker that exits is seen in that same wait.

Why fold rather than run the threads as tasks the scheduler picks: a thread of the
scheduler's would need a slot, a grant semaphore and a stack of its own in every
process that has one; folded, nothing runs that the scheduler does not run, one process
runs at a time, and a replay takes the same steps. What it changes: results arrive
when someone waits for them, not in the background (``AsyncResult.ready()`` and
``Future.done()``-style polling loops take a result when they look, so they end), and
callbacks run in the waiting process, where the real ones run on a helper thread.

``Folded`` stands in for the ``threading.Event`` or ``Condition`` a result or a future
waits on: locking it is free (one thread), and its ``wait`` drains until what the
waiter waits for is there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType

PLUMBING = True

Drain = Callable[[float | None], bool]
"""Take one result (or see one worker exit), waiting at most so long (None: as long as it
takes): False if the time ran out first."""


class Folded:
    """An event's flag, or a condition over ``done``, whose waits drain."""

    def __init__(self, drain: Drain, done: Callable[[], bool] | None = None) -> None:
        self._drain = drain
        self._done = done
        self._flag = False

    # -- threading.Event ---------------------------------------------------------------------
    def is_set(self) -> bool:
        """Set, or set by the result this takes if one is there (a poll loop ends)."""
        if not self._flag and self._done is None:
            self._drain(0.0)
        return self._flag

    def set(self) -> None:
        self._flag = True

    def clear(self) -> None:
        self._flag = False

    # -- threading.Condition ----------------------------------------------------------------
    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return True

    def release(self) -> None:
        """Nothing to release: one thread."""

    def __enter__(self) -> bool:
        return True

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        """Nothing to release."""

    def notify(self, n: int = 1) -> None:
        """Nobody else waits: the waiter drains."""

    def notify_all(self) -> None:
        """Nobody else waits."""

    # -- both -------------------------------------------------------------------------------
    def wait(self, timeout: float | None = None) -> bool:
        done = self._done or (lambda: self._flag)
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        while not done():
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not self._drain(left):
                return done()
        return True
