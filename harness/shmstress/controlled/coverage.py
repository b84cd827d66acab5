"""What a search covered, and where that was thin: data only (``render`` words it).

A clean run of a strategy looks exactly like a clean run of a correct program
unless it says what it tried. PCT at depth d makes at most d-1 preemptions an
execution; a run whose roles never yield switches workers only by preemption,
so a bug that needs more preemptions than any execution made was never in
reach; an execution cut at ``--max-steps`` never reached its end, where the
checks at rest run; a bounded search (exhaustive, DPOR) that ran out of budget left
schedules within its bound untried, and says how many it knew of (``Search``): "N of at
least M", never that it ran them all. ``thin`` names each of these, and
``--require-coverage`` makes a clean run that has any of them exit non-zero.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from shmstress.controlled.strategies.base import Bounded, FreeRunSpec, Strategy, StrategySpec
from shmstress.controlled.strategies.pct import PctSpec
from shmstress.controlled.strategies.portfolio import Portfolio


@dataclass(frozen=True)
class Search:
    """Where a bounded search stood when the run ended: finished (every schedule within its
    bound ran), or cut by the budget (or a signal) after ``schedules_run`` of at least
    ``schedules_at_least``."""

    strategy: str  # ``StrategySpec.short``: "dpor", "exhaustive bound 2"
    finished: bool
    schedules_run: int
    schedules_at_least: int  # == schedules_run once finished


@dataclass(frozen=True)
class Coverage:
    executions: int
    members: tuple[tuple[str, int], ...] = ()  # a portfolio's (member, executions it ran)
    depths: tuple[int, ...] = ()  # PCT depths that ran
    max_preemptions: int = 0  # the most any execution made
    step_bound: int = 0  # executions cut at --max-steps
    yields: int | None = None  # yields seen; None: not counted (plain code, scripted steps)
    searches: tuple[Search, ...] = ()  # each bounded search that ran (a portfolio's members)
    alone: bool = True  # one strategy ran, not a portfolio: its cut search is thin coverage

    def tried(self) -> str:
        """What ran, in a few words, for a note that says what a miss is worth: ``pct depth
        3: 1,000 executions of at most 2 priority changes each``; a portfolio's members with
        their executions."""
        if self.members:
            return ", ".join(f"{name}: {count:,}" for name, count in self.members)
        if self.depths:
            changes = self.depths[0] - 1
            return (f"pct depth {self.depths[0]}: {self.executions:,} executions of at most "
                    f"{changes} priority change{'s' if changes != 1 else ''} each; --depth "
                    "raises it")
        return f"{self.executions:,} executions"

    def thin(self) -> tuple[str, ...]:
        """Why this search may have missed what it was meant to find, one phrase each."""
        reasons = []
        if self.executions and self.step_bound == self.executions:
            reasons.append("every execution reached --max-steps before it finished, so none "
                           "reached its end (a tracker's checks at rest, a scenario's last "
                           "asserts)")
        if self.executions and self.yields == 0:
            reasons.append("no role ever yielded: every switch of worker was a preemption, "
                           f"and no execution made more than {self.max_preemptions}; a bug "
                           f"that needs more was never in reach (what ran: {self.tried()})")
        for search in self.searches:
            if self.alone and not search.finished:
                reasons.append(f"the {search.strategy} search was not finished: "
                               f"{search.schedules_run:,} of at least "
                               f"{search.schedules_at_least:,} schedules ran")
        return tuple(reasons)


@dataclass
class CoverageCount:
    """Counts a run's executions as they end (the runner's side)."""

    executions: int = 0
    max_preemptions: int = 0
    step_bound: int = 0
    yields: int = 0
    counted: bool = False  # some execution's yields were all seen by the coordinator

    def add(self, preemptions: int, hit_bound: bool, yields: int | None) -> None:
        self.executions += 1
        self.max_preemptions = max(self.max_preemptions, preemptions)
        self.step_bound += hit_bound
        if yields is not None:
            self.counted = True
            self.yields += yields

    def result(self, strategy: Strategy | None, exhausted: bool) -> Coverage:
        spec = strategy.spec if strategy is not None else FreeRunSpec()
        members: tuple[tuple[str, int], ...] = ()
        specs: Iterable[StrategySpec] = (spec,)
        searches: list[Search] = []
        if isinstance(strategy, Portfolio):
            members = strategy.coverage()
            specs = strategy.ran()
            for index, member in enumerate(strategy.members):
                ran = strategy.turns[index]
                if ran and isinstance(member, Bounded):
                    searches.append(_search(member, member.finished, ran))
        elif isinstance(strategy, Bounded):
            searches.append(_search(strategy, exhausted, self.executions))
        depths = tuple(sorted({s.depth for s in specs if isinstance(s, PctSpec)}))
        return Coverage(self.executions, members, depths, self.max_preemptions,
                        self.step_bound, self.yields if self.counted else None,
                        tuple(searches), not isinstance(strategy, Portfolio))


def _search(strategy: Bounded, finished: bool, ran: int) -> Search:
    """Where ``strategy``, which ran ``ran`` executions, stands."""
    return Search(strategy.spec.short(), finished, ran,
                  ran if finished else ran + strategy.untried())
