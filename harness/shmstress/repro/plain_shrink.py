"""Shrink a plain bundle: the same failure in fewer preemptions, then fewer steps.

A plain scenario has no roles or parameters to lower, so shrinking is a search for a
shorter schedule of the same processes: PCT at depths 1, 2 and 3 and random walk take
turns in one session, and a failing execution with the same end and message that is
smaller by (preemptions, steps) becomes the best. The best one is replayed before it is
kept, so a shrunk bundle always reproduces.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from shmstress.controlled.strategies import exploring_strategy
from shmstress.controlled.strategies.base import Strategy, StrategySpec, seeded_rng
from shmstress.core.shm import sweep_stale_segments
from shmstress.core.signals import interruptible
from shmstress.plain.outcome import PlainOutcome
from shmstress.plain.runner import replay
from shmstress.plain.session import PlainSession
from shmstress.repro.plain_bundle import PlainBundle, expected_end, from_outcome

SEARCH = (StrategySpec("pct", depth=1), StrategySpec("pct", depth=2),
          StrategySpec("random_walk"), StrategySpec("pct", depth=3))
"""The strategies that take turns: few preemptions first."""


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


def shrink_plain(bundle: PlainBundle, max_executions: int) -> PlainShrinkReport | None:
    """The smallest schedule of ``bundle``'s failure found in ``max_executions``; None if
    the bundle does not reproduce its own failure (nothing to shrink)."""
    started = time.monotonic()
    if not _same_failure(bundle, replay(bundle.spec(), bundle.steps, bundle.execution_seed)):
        return None
    before = PlainSize(bundle.preemptions, len(bundle.steps))
    best, best_size = bundle, before
    spec = bundle.spec()
    strategies = _strategies(bundle, spec.max_processes, spec.max_steps)
    executions = 0
    sweep_stale_segments()
    with interruptible(), PlainSession(spec) as session:
        while executions < max_executions and strategies:
            strategy = strategies[executions % len(strategies)]
            if not strategy.new_execution():
                strategies.remove(strategy)
                continue
            outcome = session.execute(strategy, strategy.next_u64())
            executions += 1
            size = PlainSize(outcome.preemptions, len(outcome.steps))
            if size.key() < best_size.key() and _same_failure(bundle, outcome):
                candidate = from_outcome(bundle.scenario, spec, strategy.spec,
                                         bundle.seed, executions - 1, outcome)
                best, best_size = replace(candidate, scenario_path=bundle.scenario_path), size
    if best is not bundle and not _same_failure(
            bundle, replay(best.spec(), best.steps, best.execution_seed)):
        best, best_size = bundle, before  # a candidate that does not replay is not kept
    return PlainShrinkReport(best, before, best_size, executions, time.monotonic() - started)


def _strategies(bundle: PlainBundle, processes: int, max_steps: int) -> list[Strategy]:
    seeds = seeded_rng(bundle.seed, "shrink")
    return [exploring_strategy(spec, seeds.getrandbits(63), processes, max_steps, "plain")
            for spec in SEARCH]


def _same_failure(bundle: PlainBundle, outcome: PlainOutcome) -> bool:
    failure = outcome.failure
    return (outcome.failed and failure is not None and failure.end is expected_end(bundle)
            and failure.message == bundle.failure.message)
