"""A controlled session tells an observing strategy what each step touched: one footprint
per step, in schedule order, as the tracker's words declare it from the point's label and
fields, with a write to the lock a point acquires and what a nested acquire inside the
step declares, and None where nothing is declared
(``controlled/footprints.py``; the tracker is ``tests/trackers/footprinted.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from shmstress.controlled.execution import PhasePlan
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.result import ControlledResult
from shmstress.controlled.runner import prepare, run_controlled, session_spec
from shmstress.controlled.session import Session
from shmstress.controlled.strategies import DporSpec, ExhaustiveSpec, RandomWalkSpec
from shmstress.controlled.strategies.base import StrategySpec
from shmstress.core.access import LOCK, Access, Footprint
from shmstress.core.config import RunConfig
from shmstress.repro.bundle import from_controlled
from shmstress.repro.replay import Verdict, replay_bundle
from shmstress.trackers.dra.variants import VARIANTS
from tests.helpers import StepByStep
from tests.trackers.footprinted import OWN, TALLY, TOTAL

FOOTPRINTED = f"{Path(__file__).parent / 'trackers' / 'footprinted.py'}:Footprinted"


class _Watching(StepByStep):
    """Random walk, asked step by step (no scripts), that keeps what it is shown."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.seen: list[tuple[Footprint, ...]] = []

    @property
    def spec(self) -> StrategySpec:
        return RandomWalkSpec()

    def observe(self, footprints: Sequence[Footprint]) -> None:
        self.seen.append(tuple(footprints))


def test_each_step_gets_what_its_point_declares_with_its_lock() -> None:
    config, tracker_cls, workers = prepare(RunConfig(
        tracker=FOOTPRINTED, variant="racy", seed=5, params={"private": 2}))
    strategy = _Watching(5)
    with Session(session_spec(config, tracker_cls, workers, 200)) as session:
        lock = next(iter(session._locks))  # the tally's lock slot
        outcomes = []
        for _ in range(3):
            strategy.new_execution()
            outcomes.append(session.execute(strategy, strategy.next_u64(), PhasePlan(100)))
    assert len(strategy.seen) == 3
    for outcome, footprints in zip(outcomes, strategy.seen, strict=True):
        assert len(footprints) == len(outcome.steps) > 0
        for step, footprint in zip(outcome.steps, footprints, strict=True):
            assert footprint.worker == step.worker
            expected: tuple[Access, ...] | None = {
                "bump own cell": (Access(OWN, step.worker, True),),
                "count in tally": (Access(LOCK, lock, True), Access(TALLY, 0, True),
                                   Access(OWN, step.worker, True)),
                "read total": (Access(TOTAL, 0, False),),
                "write total": (Access(TOTAL, 0, True),),
            }.get(step.label)
            assert footprint.accesses == expected, step
    labels = {step.label for outcome in outcomes for step in outcome.steps}
    assert {"bump own cell", "count in tally", "read total", "done"} <= labels


def test_dpor_fed_by_the_session_finds_the_lost_update_before_exhaustive_search() -> None:
    """With the bumps declared independent, DPOR orders only the total and tally steps;
    bounded exhaustive search first spends its preemptions among the bumps. The failure
    DPOR finds reruns under replay, and its bundle replays."""
    config = RunConfig(tracker=FOOTPRINTED, variant="racy", seed=3,
                       params={"private": 4, "undeclared": 0})

    def search(strategy: StrategySpec) -> ControlledResult:
        return run_controlled(config, ControlledOptions(strategy, executions=100,
                                                        max_steps=200))

    dpor = search(DporSpec())
    exhaustive = search(ExhaustiveSpec(bound=2))
    assert dpor.failing is not None and exhaustive.failing is not None
    assert dpor.failing.index < exhaustive.failing.index
    assert dpor.failing.reproduced
    bundle = from_controlled(dpor)
    assert bundle is not None
    report = replay_bundle(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_point_of_the_dra_tracker_is_declared(variant: str) -> None:
    """An undeclared point would make DPOR explore every order around it: each label the
    DRA tracker reaches in a variant has its entry in ``dra/accesses.py``."""
    config, tracker_cls, workers = prepare(RunConfig(
        tracker="dra", variant=variant, seed=2, scenario="seed-race"))
    strategy = _Watching(2)
    with Session(session_spec(config, tracker_cls, workers, 2000)) as session:
        for _ in range(2):
            strategy.new_execution()
            session.execute(strategy, strategy.next_u64(), PhasePlan(20))
    steps = [f for footprints in strategy.seen for f in footprints]
    assert steps and all(f.accesses is not None for f in steps)
