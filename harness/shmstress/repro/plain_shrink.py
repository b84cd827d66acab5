"""Shrink a plain bundle: the same failure in fewer preemptions, then fewer steps.

A plain scenario has no roles or parameters to lower, so shrinking is a search for a
shorter schedule of the same processes, in two stages that each print a line. First every
schedule with no preemption, then every one with one, and so on below the bundle's count
(bounded exhaustive search, with the bundle's execution seed so the program draws what it
drew): a bound searched whole proves that fewer preemptions cannot fail, and the stage ends
at the first bound that fails. Then PCT at depths 1, 2 and 3 and random walk take turns
looking for fewer steps, until ``STALE_EXECUTIONS`` in a row found nothing smaller: the
fewest steps a failure needs cannot be known, so a search that stopped finding is the
sign to stop. A failing execution with the same end and message that is smaller by
(preemptions, steps) becomes the best, and the best is replayed before it is kept, so a
shrunk bundle always reproduces. The budget (executions, seconds) is ``ShrinkOptions``'s,
as for a tracker.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from shmstress.controlled.strategies import Exhaustive, PctSpec, RandomWalkSpec, exploring_strategy
from shmstress.controlled.strategies.base import Strategy, seeded_rng
from shmstress.core.plurals import counted
from shmstress.core.shm import sweep_stale_segments
from shmstress.core.signals import interruptible
from shmstress.plain.outcome import PlainOutcome
from shmstress.plain.runner import replay
from shmstress.plain.session import PlainSession
from shmstress.repro.plain_bundle import PlainBundle, expected_end, from_outcome
from shmstress.repro.shrink import ShrinkOptions

SEARCH = (PctSpec(depth=1), PctSpec(depth=2),
          RandomWalkSpec(), PctSpec(depth=3))
"""The strategies that take turns looking for fewer steps: few preemptions first."""

STALE_EXECUTIONS = 300
"""Executions in a row that found nothing smaller, after which the step search stops."""


@dataclass(frozen=True)
class PlainSize:
    preemptions: int
    steps: int

    def key(self) -> tuple[int, int]:
        return self.preemptions, self.steps


@dataclass(frozen=True)
class PlainShrinkReport:
    bundle: PlainBundle  # the smallest reproducing one (the original if nothing smaller)
    before: PlainSize
    after: PlainSize
    executions: int
    elapsed_s: float


class _Search:
    """The executions of one shrink, its budget and the best failure so far."""

    def __init__(self, bundle: PlainBundle, session: PlainSession,
                 options: ShrinkOptions) -> None:
        self.bundle = bundle
        self.session = session
        self.options = options
        self.best = bundle
        self.best_size = PlainSize(bundle.preemptions, len(bundle.steps))
        self.executions = 0
        self.started = time.monotonic()

    def spent(self) -> bool:
        seconds = self.options.max_seconds
        return (self.executions >= self.options.max_executions
                or (seconds is not None and time.monotonic() - self.started >= seconds))

    def run(self, strategy: Strategy) -> bool:
        """One execution under ``strategy``; True if it became the best."""
        spec = self.session.spec
        outcome = self.session.execute(strategy, strategy.next_u64())
        self.executions += 1
        size = PlainSize(outcome.preemptions, len(outcome.steps))
        if size.key() >= self.best_size.key() or not _same_failure(self.bundle, outcome):
            return False
        candidate = from_outcome(self.bundle.scenario, spec, strategy.spec, self.bundle.seed,
                                 self.executions - 1, outcome)
        self.best = replace(candidate, scenario_path=self.bundle.scenario_path)
        self.best_size = size
        return True

    def report(self, stage: str) -> None:
        if self.options.progress is not None:
            size = self.best_size
            self.options.progress(
                f"shrink: {stage}: best {counted(size.preemptions, 'preemption')}, "
                f"{counted(size.steps, 'step')} ({counted(self.executions, 'execution')}, "
                f"{time.monotonic() - self.started:.1f} s)")


def shrink_plain(bundle: PlainBundle,
                 options: ShrinkOptions | None = None) -> PlainShrinkReport | None:
    """The smallest schedule of ``bundle``'s failure found within ``options``' budget; None
    if the bundle does not reproduce its own failure (nothing to shrink)."""
    options = options or ShrinkOptions()
    started = time.monotonic()
    if not _same_failure(bundle, replay(bundle.spec(), bundle.steps, bundle.execution_seed)):
        return None
    before = PlainSize(bundle.preemptions, len(bundle.steps))
    spec = bundle.spec()
    sweep_stale_segments()
    with interruptible(), PlainSession(spec) as session:
        search = _Search(bundle, session, options)
        search.report(_fewer_preemptions(search))
        search.report(_fewer_steps(search, _strategies(bundle, spec.max_processes,
                                                        spec.max_steps)))
    best, best_size = search.best, search.best_size
    if best is not bundle and not _same_failure(
            bundle, replay(best.spec(), best.steps, best.execution_seed)):
        best, best_size = bundle, before  # a candidate that does not replay is not kept
    return PlainShrinkReport(best, before, best_size, search.executions,
                             time.monotonic() - started)


def _fewer_preemptions(search: _Search) -> str:
    """Every schedule with 0, 1, ... preemptions, below the best's count; says how far it
    got."""
    for bound in range(search.best_size.preemptions):
        strategy = Exhaustive(search.bundle.seed, bound, search.bundle.execution_seed)
        tried = 0
        while strategy.new_execution():
            if search.spent():
                return (f"fewer preemptions: the budget ran out within "
                        f"{counted(bound, 'preemption')}, after {counted(tried, 'schedule')}")
            tried += 1
            if search.run(strategy):
                return (f"fewer preemptions: a failure within {counted(bound, 'preemption')}"
                        f" (every schedule with fewer searched whole)")
    return ("fewer preemptions: none fails with fewer (every schedule with fewer searched "
            "whole)")


def _fewer_steps(search: _Search, strategies: list[Strategy]) -> str:
    stale = 0
    while not search.spent() and strategies and stale < STALE_EXECUTIONS:
        strategy = strategies[search.executions % len(strategies)]
        if not strategy.new_execution():
            strategies.remove(strategy)
            continue
        stale = 0 if search.run(strategy) else stale + 1
    if stale >= STALE_EXECUTIONS:
        return f"fewer steps: nothing smaller in the last {STALE_EXECUTIONS} executions"
    return "fewer steps: the budget ran out" if search.spent() else "fewer steps: searched"


def _strategies(bundle: PlainBundle, processes: int, max_steps: int) -> list[Strategy]:
    seeds = seeded_rng(bundle.seed, "shrink")
    return [exploring_strategy(spec, seeds.getrandbits(63), processes, max_steps, "plain")
            for spec in SEARCH]


def _same_failure(bundle: PlainBundle, outcome: PlainOutcome) -> bool:
    failure = outcome.failure
    return (outcome.failed and failure is not None and failure.end is expected_end(bundle)
            and failure.message == bundle.failure.message)
