"""Replay: take exactly the recorded steps, and check each one before taking it.

Before step i the recorded worker must be waiting at the recorded label; if
it is somewhere else, blocked, or finished, the replay stops there with the
step number and both sides, rather than drifting on into a different run.
It also notes where the recorded schedule deviates from the schedule
without preemptions: that list is what shrinking works on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shmstress.controlled.strategies.base import (
    OneExecution,
    ScheduleDiverged,
    ScheduleEnded,
    SchedulerView,
    StrategySpec,
    default_choice,
)
from shmstress.core.trace import Step


@dataclass(frozen=True)
class ReplaySpec(StrategySpec):
    """A recorded schedule, step for step (``shmstress replay``)."""

    name = "replay"


class Replay(OneExecution):
    def __init__(self, steps: Sequence[Step], execution_seed: int) -> None:
        self._steps = tuple(steps)
        self._seed = execution_seed
        self.deviations: list[tuple[int, int]] = []
        self.spec = ReplaySpec()

    def new_execution(self) -> bool:
        if not super().new_execution():
            return False
        self.deviations = []
        return True

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        step = view.step
        if step >= len(self._steps):
            raise ScheduleEnded
        expected = self._steps[step]
        worker = expected.worker
        if worker not in view.runnable:
            raise ScheduleDiverged(step, expected, view.who(worker), view.describe(worker))
        actual = view.label(worker)
        if actual != expected.label:
            raise ScheduleDiverged(step, expected, view.who(worker),
                                   f"{view.who(worker)} is at {actual!r}")
        if worker != default_choice(view):
            self.deviations.append((step, worker))
        return worker, 1

    def next_u64(self) -> int:
        return self._seed
