"""Explore a plain-code scenario, execution after execution; replay one execution.

Exploring stops at the first failing execution (a process raised, a deadlock,
no progress). Every execution is recorded as it runs (a step costs a few
words on the board), so the failing one needs no re-run to be explained; the
caller writes its bundle, and a replay of that bundle follows its steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shmstress.controlled.coverage import Coverage, CoverageCount
from shmstress.controlled.strategies import DEFAULT, Replay, exploring_strategy
from shmstress.controlled.strategies.base import StrategySpec, current_spec, seeded_rng
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.shm import sweep_stale_segments
from shmstress.core.signals import interruptible
from shmstress.core.trace import Step
from shmstress.plain.outcome import PlainEnd, PlainOutcome
from shmstress.plain.session import FRESH_HOST_EXECUTIONS, PlainSession, PlainSpec

Progress = Callable[[int, dict[str, int]], None]
"""Called after each execution with (executions so far, ends so far)."""


@dataclass(frozen=True)
class Exploration:
    """How to search: a strategy, a seed and a budget of executions."""

    strategy: StrategySpec = field(default_factory=lambda: StrategySpec(DEFAULT))
    seed: int = 0
    executions: int = 1000

    def validate(self) -> None:
        if self.executions < 1:
            raise ConfigError(f"--executions must be at least 1, got {self.executions}")


@dataclass(frozen=True)
class PlainResult:
    """Every execution's end, counted, and the first failing execution if there was one."""

    spec: PlainSpec
    exploration: Exploration
    executions: int
    ends: dict[str, int]
    steps: int  # over every execution
    elapsed_s: float
    exhausted: bool  # the strategy had nothing left to try
    failing: PlainOutcome | None = None
    failing_index: int = -1  # 0-based among the executions
    found_by: StrategySpec | None = None  # the failing execution's (a portfolio's member)
    coverage: Coverage | None = None  # controlled mode's: what the search tried

    @property
    def strategy(self) -> StrategySpec:
        """What a bundle of the failing execution stores as its strategy."""
        return self.found_by or self.exploration.strategy

    @property
    def exit_code(self) -> ExitCode:
        if self.failing is not None and self.failing.failed:
            return ExitCode.FAILURE
        if self.ends.get(PlainEnd.HUNG.value):
            return ExitCode.BROKEN
        return ExitCode.CLEAN

    @property
    def executions_per_s(self) -> float:
        return self.executions / self.elapsed_s if self.elapsed_s > 0 else 0.0


def explore(spec: PlainSpec, exploration: Exploration,
            progress: Progress | None = None) -> PlainResult:
    """Run executions until one fails, the budget is spent or the strategy runs out."""
    exploration.validate()
    strategy = None if spec.free is not None else exploring_strategy(
        exploration.strategy, exploration.seed, spec.max_processes, spec.max_steps, "plain")
    seeds = seeded_rng(exploration.seed, "free")
    sweep_stale_segments()
    ends: dict[str, int] = {}
    steps = 0
    started = time.monotonic()
    failing: PlainOutcome | None = None
    found_by: StrategySpec | None = None
    count = CoverageCount()
    exhausted = False
    executions = 0
    fresh = exploration.executions >= FRESH_HOST_EXECUTIONS  # a long search: a lean host
    with interruptible(), PlainSession(spec, fresh) as session:
        while executions < exploration.executions:
            if strategy is not None and not strategy.new_execution():
                exhausted = True
                break
            seed = strategy.next_u64() if strategy is not None else seeds.getrandbits(63)
            outcome = session.execute(strategy, seed)
            executions += 1
            ends[outcome.end.value] = ends.get(outcome.end.value, 0) + 1
            steps += len(outcome.steps)
            count.add(outcome.preemptions, outcome.end is PlainEnd.STEP_BOUND, None)
            if progress is not None:
                progress(executions, ends)
            if outcome.failed or outcome.end is PlainEnd.HUNG:
                failing = outcome
                if strategy is not None:
                    found_by = current_spec(strategy)
                break
    return PlainResult(spec, exploration, executions, ends, steps,
                       time.monotonic() - started, exhausted, failing,
                       executions - 1 if failing is not None else -1, found_by,
                       None if strategy is None else count.result(strategy, exhausted))


def replay(spec: PlainSpec, steps: Sequence[Step], execution_seed: int) -> PlainOutcome:
    """Run one execution that takes exactly ``steps`` (it stops where it cannot)."""
    sweep_stale_segments()
    strategy = Replay(steps, execution_seed)
    strategy.new_execution()
    with interruptible(), PlainSession(spec) as session:
        return session.execute(strategy, execution_seed)
