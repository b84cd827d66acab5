"""Drawn: every "who runs next" is a choice made by a callback (a Hypothesis draw).

``shmstress lincheck`` runs each Hypothesis example as one execution whose program and
schedule both come from the example's choice sequence, so Hypothesis' shrinker shrinks
them together and its database replays the pair exactly. The coordinator of a plain
session runs in the process that runs the Hypothesis test, so a decision is a draw made
on the spot, one per step at which more than one process can go (a step with one
candidate draws nothing: the choice sequence holds only real decisions).

Choice 0 is always the schedule without preemptions (``base.default_choice``) and the
others follow in id order, so a choice sequence that shrinks towards zeros shrinks the
schedule towards fewer preemptions. A callback that raises (Hypothesis stops an example
whose choices ran out) must not tear down the session in the middle of an execution: the
execution ends there as a replay past its schedule ends (``ScheduleEnded``: the processes
unwind, the session stays ready) and the exception is kept for the caller to raise once it
is over (``raise_interruption``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shmstress.controlled.strategies.base import (
    OneExecution,
    ScheduleEnded,
    SchedulerView,
    StrategySpec,
    default_choice,
)

Choose = Callable[[int], int]
"""Given the number of options (at least 2), the index of the one taken."""


@dataclass(frozen=True)
class DrawnSpec(StrategySpec):
    """A schedule whose every choice is drawn from Hypothesis's example."""

    name = "drawn"


class Drawn(OneExecution):
    def __init__(self, choose: Choose, execution_seed: int = 0) -> None:
        self._choose = choose
        self._seed = execution_seed
        self.decisions = 0  # draws made in the execution
        self.interruption: BaseException | None = None
        self.spec = DrawnSpec()

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        runnable = view.runnable
        first = default_choice(view)
        if self.interruption is not None:
            raise ScheduleEnded
        if len(runnable) == 1:
            return first, 1
        options = [first, *(worker for worker in runnable if worker != first)]
        try:
            index = self._choose(len(options))
        except BaseException as exc:
            self.interruption = exc
            raise ScheduleEnded from None
        self.decisions += 1
        return options[index % len(options)], 1

    def next_u64(self) -> int:
        return self._seed

    def raise_interruption(self) -> None:
        """Raise what the callback raised, if it did, now that the execution is over."""
        if self.interruption is not None:
            raise self.interruption
