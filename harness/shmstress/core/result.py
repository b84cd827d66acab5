"""What a run produced: data only. ``render_summary`` turns it into text, separately."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from shmstress.core.config import RunConfig
from shmstress.core.exit_reason import ExitCode, ExitReason
from shmstress.core.noise import AimStats
from shmstress.core.trace import Recording
from shmstress.core.workers import WorkerInfo

NO_PROGRESS = "no-progress"
"""The invariant an execution that cannot go on is reported under (``controlled.progress``)."""


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

    def matches(self, other: Violation | None) -> bool:
        """The same invariant with the same fields (worker pids and timings may differ)."""
        return other is not None and not differences(self.invariant, self.fields, other)


def differences(
    invariant: str, fields: Mapping[str, int], found: Violation
) -> dict[str, tuple[object, object]]:
    """What ``found`` does not share with a violation of ``invariant`` with ``fields``: name ->
    (expected, found), for the invariant and every field (None where one side lacks it)."""
    differs: dict[str, tuple[object, object]] = {}
    if found.invariant != invariant:
        differs["invariant"] = (invariant, found.invariant)
    for name in dict.fromkeys([*fields, *found.fields]):
        expected, value = fields.get(name), found.fields.get(name)
        if expected != value:
            differs[name] = (expected, value)
    return differs


def principal(violations: Sequence[Violation]) -> Violation | None:
    """The violation a failure is about: the earliest one online (by sequence number, the
    true order of points), else the first found at rest. The one rule every report uses."""
    online = [v for v in violations if v.seq is not None]
    if online:
        return min(online, key=lambda v: v.seq or 0)
    return violations[0] if violations else None


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
    phase_changes: tuple[int, ...] = ()  # points handed out when DRAIN, then STOP, began
    startup_s: float | None = None
    """Run start until every worker was past its first step: the start-up transient, whose
    races (workers starting one after another) say little about the code at steady state.
    None: some worker never got there."""
    coverage: int | None = None
    """Interleaving coverage: distinct (location, location) pairs two workers took in that
    order on one object, over the recorded points (``shmstress.plugin.coverage``)."""
    aim: AimStats | None = None  # what aimed noise did (None: another policy)

    @property
    def first_after_startup_s(self) -> float | None:
        """Time to the first violation from the end of the start-up transient (0: found during
        it); None without an online violation or a known start-up."""
        first = self.principal_violation
        if first is None or first.elapsed_s is None or self.startup_s is None:
            return None
        return max(0.0, first.elapsed_s - self.startup_s)

    @property
    def points_per_s(self) -> float:
        return self.points / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def principal_violation(self) -> Violation | None:
        return principal(self.violations)

    @property
    def exit_code(self) -> ExitCode:
        """The exit reason's code, except that a violation found before the run ended cleanly
        (or was cut short by its own stop) is a failure."""
        code = self.exit_reason.exit_code
        if code in (ExitCode.CLEAN, ExitCode.FAILURE):
            return ExitCode.FAILURE if self.violation_count else ExitCode.CLEAN
        return code
