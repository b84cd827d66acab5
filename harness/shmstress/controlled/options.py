"""The options of a controlled run, beyond the RunConfig every run has."""

from __future__ import annotations

from dataclasses import dataclass, field

from shmstress.controlled.strategies import DEFAULT, spec_named
from shmstress.controlled.strategies.base import StrategySpec
from shmstress.core.errors import ConfigError

DEFAULT_RUN_STEPS = 100
DEFAULT_MAX_STEPS = 5000
DEFAULT_EXECUTIONS = 1000


@dataclass(frozen=True)
class ControlledOptions:
    strategy: StrategySpec = field(default_factory=lambda: spec_named(DEFAULT))
    executions: int = DEFAULT_EXECUTIONS
    run_steps: int = DEFAULT_RUN_STEPS  # steps of churn per execution before it drains
    max_steps: int = DEFAULT_MAX_STEPS  # an execution that has not finished by then ends
    pin: bool = True  # run coordinator and workers on one CPU
    record: bool = True  # re-run a failing execution with recording on, for its log

    def validate(self) -> None:
        problems = []
        if self.executions < 1:
            problems.append(f"--executions must be >= 1, got {self.executions}")
        if self.run_steps < 1:
            problems.append(f"--points must be >= 1, got {self.run_steps}")
        if self.max_steps <= self.run_steps:
            problems.append(f"--max-steps must be > the run phase's {self.run_steps} steps, "
                            f"got {self.max_steps}")
        if problems:
            raise ConfigError("; ".join(problems))
