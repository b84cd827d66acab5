"""What a run produced: data only. ``render_summary`` turns it into text, separately."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.config import RunConfig
from harness.exit_reason import ExitReason
from harness.recording import Recording
from harness.tracker_api import WorkerInfo


@dataclass(frozen=True)
class Violation:
    """One broken invariant, with its fields and the words the tracker chose for it."""

    invariant: str
    message: str
    fields: Mapping[str, int]
    worker: WorkerInfo | None
    seq: int | None
    elapsed_s: float | None
    at_rest: bool = False


@dataclass(frozen=True)
class RunResult:
    config: RunConfig
    exit_reason: ExitReason
    violations: tuple[Violation, ...]
    violation_count: int
    elapsed_s: float
    points: int
    workers: tuple[WorkerInfo, ...]
    worker_points: Mapping[int, int] = field(default_factory=dict)
    crashes: tuple[str, ...] = ()
    drain_timed_out: bool = False
    forced_pids: tuple[int, ...] = ()
    recording: Recording | None = None
    phase_points: tuple[int, ...] = ()  # points handed out when DRAIN, then STOP, began

    @property
    def points_per_s(self) -> float:
        return self.points / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def first_violation(self) -> Violation | None:
        timed = [v for v in self.violations if v.elapsed_s is not None]
        if timed:
            return min(timed, key=lambda v: v.elapsed_s or 0.0)
        return self.violations[0] if self.violations else None

    @property
    def exit_code(self) -> int:
        if self.exit_reason in (ExitReason.INTERRUPTED, ExitReason.WORKER_CRASHED,
                                ExitReason.TIMEOUT, ExitReason.DIVERGED):
            return self.exit_reason.exit_code
        return 1 if self.violation_count else 0
