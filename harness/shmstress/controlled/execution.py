"""What one controlled execution produced: data only."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from shmstress.controlled.strategies.base import ScheduleDiverged
from shmstress.core.result import Violation, principal
from shmstress.core.trace import Step


class ExecutionEnd(enum.Enum):
    FINISHED = "finished"  # every worker finished; the tracker was checked at rest
    VIOLATION = "violation"
    DEADLOCK = "deadlock"
    STEP_BOUND = "step-bound"  # --max-steps reached before every worker finished
    NO_PROGRESS = "no-progress"  # at --max-steps, and nothing changed while each worker ran
    DIVERGED = "diverged"  # a replay left its recorded schedule
    SCHEDULE_END = "schedule-end"  # a replay took every recorded step and workers still wait
    CRASHED = "crashed"


FAILED = (ExecutionEnd.VIOLATION, ExecutionEnd.DEADLOCK, ExecutionEnd.NO_PROGRESS)


@dataclass(frozen=True)
class PhasePlan:
    """When an execution leaves the run phase.

    Exploring: churn for ``run_steps`` steps, drain until the tracker says it
    settled (or half the remaining step budget is spent), then stop. A replay
    instead switches at exactly the recorded steps (``forced``: where DRAIN,
    then STOP, began), so its phases match the run it reproduces.
    """

    run_steps: int
    forced: tuple[int, ...] | None = None
    step_limit: int | None = None  # a tighter step bound than the session's, for this one
    rest_at_end: bool = False  # a replay of a failure found at rest: check at its last step


@dataclass(frozen=True)
class ExecutionOutcome:
    end: ExecutionEnd
    execution_seed: int
    steps: tuple[Step, ...]
    preemptions: int
    phase_changes: tuple[int, ...]
    violations: tuple[Violation, ...] = ()
    violation_count: int = 0
    divergence: ScheduleDiverged | None = None
    crashes: tuple[str, ...] = ()
    yields: int | None = None  # yields the coordinator saw; None: a script hid some

    @property
    def failed(self) -> bool:
        return self.end in FAILED

    @property
    def principal_violation(self) -> Violation | None:
        return principal(self.violations)
