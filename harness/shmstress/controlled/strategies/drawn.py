"""Drawn: every "who runs next" is a choice made by a callback (a Hypothesis draw).

``shmstress lincheck`` runs each Hypothesis example as one execution whose program and
schedule both come from the example's choice sequence, so Hypothesis' shrinker shrinks
them together and its database replays the pair exactly. The coordinator of a plain
session runs in the process that runs the Hypothesis test, so a decision is a draw made
on the spot, at steps where more than one process can go (a step with one candidate draws
nothing: the choice sequence holds only real decisions).

An execution's first draw is its pace: swarm testing, each example one kind of schedule,
because one kind alone misses races another finds at once (uniform choices the racy resize
map of ``examples/lincheck`` in two seeds of three; preemptions made rare everywhere, the
racy counter):

- pace 0, uniform: every choice drawn over all the options, a random walk (Hypothesis
  favours 0 in its draws, the choice without a preemption, so a walk less restless than a
  uniform one). It finds the races of two adjacent steps (a read and its write back) at
  once, but seldom lets one process run several steps while another waits inside a window.
- pace 1, patient: a process that could go on is preempted once in ``PATIENT`` draws, once
  in ``RELEASED`` right after it released a lock.
- pace 2, priorities: PCT drawn. Each process gets a drawn rank when it first competes, the
  highest runs until it blocks or yields, and at up to ``CHANGE_POINTS`` drawn decisions
  (among the first ``HORIZON``) the running process drops below every other: a process
  stalls in a window while another runs whole operations.

Together they find more of the examples' races, and shrink more of their failures to two
lanes, than uniform choices alone; the racy assume cache (a caller pops another's event and
releases the lock; the owner returns and reads before the event is delivered) is still
missed in Hypothesis' default 100 examples at every pace (the measurements: the lincheck
tutorial, "Drawn schedules or the portfolio?").

Every draw's 0 is the schedule without preemptions (``base.default_choice``), so a choice
sequence that shrinks towards zeros shrinks the schedule towards fewer preemptions: at
paces 0 and 1 choice 0 is that worker and the others follow in id order; at pace 2 equal
ranks defer to it and fewer or earlier change points are smaller draws.

A callback that raises (Hypothesis stops an example whose choices ran out) must not tear
down the session in the middle of an execution: the execution ends there as a replay past
its schedule ends (``ScheduleEnded``: the processes unwind, the session stays ready) and the
exception is kept for the caller to raise once it is over (``raise_interruption``).
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

UNIFORM, PATIENT_PACE, PRIORITIES = range(3)
PACES = 3
PATIENT = 16
"""At the patient pace, one draw in this many preempts a process that could go on..."""
RELEASED = 4
"""... and one in this many right after it released a lock."""
CHANGE_POINTS = 2
"""At the priorities pace, at most this many decisions drop the running process (PCT's
depth 3)."""
HORIZON = 64
"""The decisions a change point is drawn among: a fixed range, so that an example replays
the same schedule wherever it runs (PCT learns its range from earlier executions)."""
RANKS = 8
"""The ranks a process is drawn among at the priorities pace."""


@dataclass(frozen=True)
class DrawnSpec(StrategySpec):
    """A schedule whose every choice is drawn from Hypothesis's example."""

    name = "drawn"


class Drawn(OneExecution):
    def __init__(self, choose: Choose, execution_seed: int = 0) -> None:
        self._choose = choose
        self._seed = execution_seed
        self.decisions = 0  # decisions made in the execution
        self.interruption: BaseException | None = None
        self.spec = DrawnSpec()
        self.pace: int | None = None  # drawn at the first decision
        self._released = False  # the step last taken was a release
        self._rank: dict[int, int] = {}  # pace 2: each process's, drawn when it first competes
        self._changes: list[int] = []  # pace 2: the decisions that drop the running process
        self._lowest = 0

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        runnable = view.runnable
        first = default_choice(view)
        if self.interruption is not None:
            raise ScheduleEnded
        if len(runnable) == 1:
            self._released = view.label(first).startswith("release ")
            return first, 1
        try:
            if self.pace is None:
                self._start(self._choose(PACES))
            if self.pace == PRIORITIES:
                chosen = self._by_priority(view, first)
            else:
                options = [first, *(worker for worker in runnable if worker != first)]
                chosen = options[self._index(view, len(options)) % len(options)]
        except BaseException as exc:
            self.interruption = exc
            raise ScheduleEnded from None
        self.decisions += 1
        self._released = view.label(chosen).startswith("release ")
        return chosen, 1

    def _start(self, pace: int) -> None:
        self.pace = pace
        if pace == PRIORITIES:
            count = self._choose(CHANGE_POINTS + 1)
            self._changes = sorted(self._choose(HORIZON) for _ in range(count))

    def _index(self, view: SchedulerView, options: int) -> int:
        """Paces 0 and 1: the index among the options. At pace 1 every value up to
        ``odds - 2`` goes on (index 0) and each of the top ones switches."""
        if self.pace == UNIFORM or not view.current_can_continue:
            return self._choose(options)
        odds = RELEASED if self._released else PATIENT
        value = self._choose(odds + options - 2)
        return max(0, value - (odds - 2))

    def _by_priority(self, view: SchedulerView, first: int) -> int:
        """Pace 2: the highest-ranked runnable process, the one without a preemption among
        equals; the running one drops below all at a change point or when it yields."""
        current = view.current
        dropped = self.decisions in self._changes or (
            current in view.runnable and not view.current_can_continue)
        if current >= 0 and dropped:
            self._lowest -= 1
            self._rank[current] = self._lowest
        for worker in view.runnable:
            if worker not in self._rank:
                self._rank[worker] = self._choose(RANKS)
        best = max(self._rank[worker] for worker in view.runnable)
        if self._rank.get(first) == best:
            return first
        return min(worker for worker in view.runnable if self._rank[worker] == best)

    def next_u64(self) -> int:
        return self._seed

    def raise_interruption(self) -> None:
        """Raise what the callback raised, if it did, now that the execution is over."""
        if self.interruption is not None:
            raise self.interruption
