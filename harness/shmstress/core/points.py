"""What a point calls out to: the gate before it, and the sinks after it.

Free mode's gate injects noise, controlled mode's hands over to the coordinator;
the recorder is a sink. The runtime and the instrumented locks both use these,
so they live apart from either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class PointGate(Protocol):
    """Decides what happens before a point: noise in free mode, a handoff in controlled mode."""

    def before_point(self, label: str) -> None: ...


class AcquireGate(Protocol):
    """A gate that must know when a point is the outer acquire of an instrumented lock.

    Controlled mode needs it: a worker whose lock is held by another worker is
    blocked there, so the coordinator must run someone else. Gates without it
    (free mode's noise, test gates) see lock acquires as plain points.
    """

    def before_acquire(self, label: str, lock: int) -> None: ...


class PointSink(Protocol):
    """Receives every point after its sequence number is taken (recording, tracing)."""

    def __call__(self, seq: int, worker: int, label: str, fields: dict[str, object]) -> None: ...


class LogSink(Protocol):
    """Receives a tracker's log call between points (recording); ``level`` indexes "IWE"."""

    def __call__(
        self, seq: int, worker: int, message: str, level: int, fields: dict[str, object]
    ) -> None: ...


class PointTaker(Protocol):
    """What an instrumented lock needs of the runtime whose worker takes it."""

    @property
    def worker_id(self) -> int: ...

    @property
    def last_seq(self) -> int: ...

    @property
    def log_sink(self) -> LogSink | None: ...

    @property
    def one_at_a_time(self) -> bool:
        """Only one worker runs at a time (controlled mode): a lock the gate let a worker
        take is free, so the process-shared lock under it is not needed."""
        ...

    @property
    def acquire_hook(self) -> Callable[[str, int], None] | None:
        """Replaces ``before_acquire`` where set (controlled mode's gate)."""
        ...

    def before_acquire(self, label: str, lock: int) -> None: ...

    def commit_point(self, label: str, fields: dict[str, object]) -> int: ...
