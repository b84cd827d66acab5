"""Shrink shortens: a long failing schedule comes out as one of tens of steps.

A free failure of the DRA seed race runs thousands of steps of churn before
the race; shrinking must find it again within a short step bound. A
controlled failure of a user tracker must come out as short as the shortest
failing execution a bounded exhaustive search finds with a short run phase.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shmstress.controlled.execution import PhasePlan
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.runner import prepare, run_controlled, session_spec
from shmstress.controlled.session import Session
from shmstress.controlled.strategies import Exhaustive, PctSpec
from shmstress.controlled.strategies.blocks import blocks_of, without_block
from shmstress.core.config import RunConfig
from shmstress.core.trace import Step
from shmstress.free.runner import run
from shmstress.repro.bundle import Bundle, from_controlled, from_free_run
from shmstress.repro.replay import Verdict, replay_bundle
from shmstress.repro.shrink import ShrinkOptions, ShrinkReport, shrink_bundle

pytestmark = pytest.mark.stress

COUNTER = str(Path(__file__).resolve().parents[1] / "examples" / "counter_tracker.py")
TICKETS = f"{COUNTER}:TicketTracker"


def _assert_no_bigger(report: ShrinkReport) -> None:
    before, after = report.before, report.after
    assert after.steps <= before.steps
    assert after.preemptions <= before.preemptions
    assert after.workers <= before.workers
    assert after.key() <= before.key()


def _assert_replays(report: ShrinkReport, invariant: str) -> None:
    assert report.bundle.violation.invariant == invariant
    assert len(report.bundle.steps) == report.after.steps
    assert report.bundle.preemptions == report.after.preemptions
    replayed = replay_bundle(report.bundle, record=False)
    assert replayed.verdict is Verdict.REPRODUCED, replayed.detail
    assert replayed.outcome.violations[0].invariant == invariant


@pytest.mark.parametrize(("variant", "budget"), [("gather-unchecked", 3000),
                                                  ("events-unordered", 3000)])
def test_a_free_failure_of_the_seed_race_shrinks_to_tens_of_steps(variant: str,
                                                                  budget: int) -> None:
    """The revision race and the unordered-events race (which needs a spinner to see an
    update at once and three workers interleaved just so) both come out in tens of steps."""
    result = run(RunConfig(tracker="dra", variant=variant, seed=3, duration=15))
    bundle = from_free_run(result)
    assert bundle is not None and bundle.mode == "free"
    lines: list[str] = []
    report = shrink_bundle(bundle, ShrinkOptions(max_executions=budget, progress=lines.append))
    assert report is not None
    assert report.before.steps > 100  # a real churn to cut
    assert report.after.steps <= 60, report.after
    assert report.after.preemptions <= 4, report.after
    _assert_no_bigger(report)
    _assert_replays(report, "gather-complete")
    assert lines and all(line.startswith("shrink: ") for line in lines)  # one per stage
    assert report.executions <= budget + 3  # the budget, plus the replays around it


def _controlled_counter_bundle(seed: int) -> Bundle:
    result = run_controlled(
        RunConfig(tracker=TICKETS, seed=seed),
        ControlledOptions(strategy=PctSpec(), executions=200, run_steps=100))
    bundle = from_controlled(result)
    assert bundle is not None
    return bundle


def _shortest_exhaustive_failure(invariant: str, points: range, bound: int) -> int:
    """The shortest failing execution over every schedule with at most ``bound`` preemptions
    for each run phase in ``points``: what `run --strategy exhaustive --points N` can find."""
    config, tracker_cls, workers = prepare(RunConfig(tracker=TICKETS, seed=1))
    shortest: int | None = None
    with Session(session_spec(config, tracker_cls, workers, max_steps=400)) as session:
        for run_steps in points:
            strategy = Exhaustive(1, bound)
            while strategy.new_execution():
                outcome = session.execute(strategy, strategy.next_u64(), PhasePlan(run_steps))
                found = outcome.principal_violation
                if outcome.failed and found is not None and found.invariant == invariant:
                    length = len(outcome.steps)
                    shortest = length if shortest is None else min(shortest, length)
    assert shortest is not None
    return shortest


def test_a_controlled_failure_of_a_user_tracker_shrinks_to_the_shortest_schedule() -> None:
    shortest = _shortest_exhaustive_failure("unique-tickets", range(1, 5), bound=2)
    for seed in (3, 4):
        bundle = _controlled_counter_bundle(seed)
        assert len(bundle.steps) > shortest  # found after some churn: something to shrink
        report = shrink_bundle(bundle, ShrinkOptions(max_executions=1000))
        assert report is not None
        assert report.after.steps <= shortest, (seed, report.after, shortest)
        _assert_no_bigger(report)
        _assert_replays(report, "unique-tickets")


def test_a_bundle_already_short_is_never_made_bigger() -> None:
    bundle = _controlled_counter_bundle(seed=3)
    first = shrink_bundle(bundle, ShrinkOptions(max_executions=600))
    assert first is not None
    second = shrink_bundle(first.bundle, ShrinkOptions(max_executions=300))
    assert second is not None
    _assert_no_bigger(second)
    assert second.after.key() <= first.after.key()
    _assert_replays(second, "unique-tickets")


def test_blocks_count_each_workers_own_steps() -> None:
    """Dropping a block merges its neighbours when they are one worker's: the switch is gone,
    and every other block still stands for the same run of that worker's steps."""
    steps = tuple(Step(worker, "x") for worker in (0, 0, 1, 0, 2, 2))
    blocks = blocks_of(steps)
    assert blocks == ((0, 2), (1, 1), (0, 1), (2, 2))
    assert without_block(blocks, 1) == ((0, 3), (2, 2))
    assert without_block(blocks, 0) == ((1, 1), (0, 1), (2, 2))
    assert without_block(blocks, 3) == ((0, 2), (1, 1), (0, 1))
