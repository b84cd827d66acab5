"""What a controlled run produced: data only (``controlled.summary`` renders it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shmstress.controlled.coverage import Coverage
from shmstress.controlled.execution import ExecutionOutcome
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.strategies.base import StrategySpec
from shmstress.core.result import RunResult


@dataclass(frozen=True)
class FailingExecution:
    """The first execution that failed, with what is needed to replay it."""

    index: int  # 0-based among the run's executions
    outcome: ExecutionOutcome
    found_after_s: float
    reproduced: bool | None  # did the recorded re-run fail the same way? None: not re-run


@dataclass(frozen=True)
class ControlledResult:
    run: RunResult  # totals over every execution; violations and recording of the failure
    strategy: StrategySpec
    options: ControlledOptions
    executions: int
    ends: Mapping[str, int]  # execution end -> how many executions ended so
    failing: FailingExecution | None
    exhausted: bool  # the strategy had nothing left to try (bounded exhaustive search)
    pinned_cpu: int | None
    coverage: Coverage | None = None  # None: the run broke before it could say

    @property
    def steps_per_s(self) -> float:
        return self.run.points_per_s

    @property
    def executions_per_s(self) -> float:
        return self.executions / self.run.elapsed_s if self.run.elapsed_s > 0 else 0.0

    @property
    def exit_code(self) -> int:
        return self.run.exit_code
