"""The instrumented lock: a process-shared lock whose acquire is a point.

Trackers use it instead of ``multiprocessing.Lock`` so that every acquire is
a scheduling decision and a log event, and the sequence number is taken
while the lock is held (per-lock order then equals sequence order). It is
reentrant for its owner, so a variant can put several structures under one
lock without rewriting their code. A nested acquire is not a point (the
worker already holds the lock: there is nothing to schedule), but a named one
(``held(label, **fields)``) is still the step its code names, so it is logged
as a record after the worker's last point, at its own call site, with its
fields.
"""

from __future__ import annotations

from multiprocessing.synchronize import Lock as MpLock
from types import TracebackType

from shmstress.core.control import FORK, L_DEPTH, L_OWNER, L_STRIDE, NO_OWNER
from shmstress.core.points import PointTaker
from shmstress.core.shm import SharedArray

PLUMBING = True
"""Point plumbing: the recorder looks past this module's frames for a call site."""


class InstrumentedLock:
    """A reentrant, process-shared lock that reports its acquisitions as points."""

    def __init__(self, runtime: PointTaker, table: SharedArray, name: str, slot: int) -> None:
        self.name = name
        self.slot = slot
        self.label = f"acquire {name}"
        self._runtime = runtime
        self._lock: MpLock = FORK.Lock()
        self._table = table.mv
        self._owner = slot * L_STRIDE + L_OWNER
        self._depth = slot * L_STRIDE + L_DEPTH

    @property
    def owner(self) -> int:
        """Worker id holding the lock, or -1."""
        return int(self._table[self._owner])

    def acquire(self, label: str | None = None, **fields: object) -> None:
        """Take the lock, a point named ``label`` (by default "acquire <name>")."""
        _Held(self, label, fields).__enter__()

    def release(self) -> None:
        table = self._table
        depth = table[self._depth] - 1
        table[self._depth] = depth
        if depth == 0:
            table[self._owner] = NO_OWNER
            if not self._runtime.one_at_a_time:
                self._lock.release()

    def held(self, label: str, **fields: object) -> _Held:
        """``with lock.held("copy allocated devices") as seq:`` names the point for logs and
        replay; ``seq`` is its sequence number (where an operation began, for a violation to
        carry). A nested acquire is no point: it gives the worker's latest point's number."""
        return _Held(self, label, fields)

    def __enter__(self) -> int:
        return _Held(self, None, {}).__enter__()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class _Held:
    """One acquisition of an instrumented lock, as a context manager.

    The acquire itself lives in ``__enter__``: ``with lock.held(...)`` is how
    trackers take locks, so its point is made one call from the tracker's line
    (no extra frame to pay for, nor for the recorder to walk out of).
    """

    __slots__ = ("_fields", "_label", "_lock")

    def __init__(
        self, lock: InstrumentedLock, label: str | None, fields: dict[str, object]
    ) -> None:
        self._lock = lock
        self._label = label
        self._fields = fields

    def __enter__(self) -> int:
        lock = self._lock
        runtime = lock._runtime
        table = lock._table
        if table[lock._owner] == runtime.worker_id and table[lock._depth] > 0:
            table[lock._depth] += 1
            log = runtime.log_sink
            if self._label is not None and log is not None:
                log(runtime.last_seq, runtime.worker_id, self._label, 0, self._fields)
            return runtime.last_seq
        label = self._label or lock.label
        hook = runtime.acquire_hook
        if hook is None:
            runtime.before_acquire(label, lock.slot)
        else:
            hook(label, lock.slot)
        if not runtime.one_at_a_time:  # else the gate let this worker on only if it is free
            lock._lock.acquire()
        table[lock._owner] = runtime.worker_id
        table[lock._depth] = 1
        return runtime.commit_point(label, self._fields)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        lock = self._lock  # ``lock.release()``, inlined: every point of a tracker ends here
        table = lock._table
        depth = table[lock._depth] - 1
        table[lock._depth] = depth
        if depth == 0:
            table[lock._owner] = NO_OWNER
            if not lock._runtime.one_at_a_time:
                lock._lock.release()
