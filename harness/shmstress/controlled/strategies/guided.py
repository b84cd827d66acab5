"""Guided: the schedule without preemptions, except for a given list of deviations.

A deviation (step, worker) runs ``worker`` at ``step`` instead of the default
choice, if it can run there; deviations that no longer apply are skipped.
Shrinking removes deviations from a failing schedule and keeps what still
fails, so the result has as few preemptions as it could find.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shmstress.controlled.strategies.base import (
    UNLIMITED,
    OneExecution,
    SchedulerView,
    StrategySpec,
    default_choice,
)


@dataclass(frozen=True)
class GuidedSpec(StrategySpec):
    """The schedule without preemptions, but for the deviations a shrink tries."""

    name = "guided"


class Guided(OneExecution):
    def __init__(self, deviations: Sequence[tuple[int, int]], execution_seed: int) -> None:
        self._plan = dict(deviations)
        self._planned_steps = sorted(self._plan)
        self._seed = execution_seed
        self._cursor = 0
        self.applied: list[tuple[int, int]] = []
        self.spec = GuidedSpec()

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        step = view.step
        chosen = default_choice(view)
        planned = self._plan.get(step)
        if planned is not None and planned != chosen and planned in view.runnable:
            chosen = planned
            self.applied.append((step, planned))
        steps = self._planned_steps
        while self._cursor < len(steps) and steps[self._cursor] <= step:
            self._cursor += 1
        if self._cursor < len(steps):
            return chosen, steps[self._cursor] - step
        return chosen, UNLIMITED

    def next_u64(self) -> int:
        return self._seed
