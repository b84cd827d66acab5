"""Strategies on a simulated scheduler: their choices, leases, divergence checks and search."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from harness.recording import Step
from harness.strategies import (
    Exhaustive,
    Guided,
    Pct,
    RandomWalk,
    Replay,
    ScheduleDiverged,
    ScheduleEnded,
    Strategy,
)
from harness.strategies.base import UNLIMITED, default_choice


@dataclass
class FakeView:
    step: int = 0
    current: int = -1
    runnable: Sequence[int] = (0, 1, 2)
    current_can_continue: bool = False
    workers: int = 3
    labels: dict[int, str] = field(default_factory=dict)

    def label(self, worker: int) -> str:
        return self.labels.get(worker, f"at-{worker}")

    def describe(self, worker: int) -> str:
        return f"worker {worker} is elsewhere"


def _drive(strategy: Strategy, programs: Sequence[Sequence[str]]) -> list[tuple[int, str]]:
    """Run a tiny simulated system: each worker takes its labels in order, nobody blocks."""
    positions = [0] * len(programs)
    trace: list[tuple[int, str]] = []
    current = -1
    while True:
        runnable = [w for w, p in enumerate(programs) if positions[w] < len(p)]
        if not runnable:
            return trace
        view = FakeView(step=len(trace), current=current, runnable=runnable,
                        current_can_continue=current in runnable, workers=len(programs),
                        labels={w: programs[w][positions[w]] for w in runnable})
        worker, lease = strategy.next_task(view)
        assert worker in runnable and lease >= 1
        for _ in range(min(lease, len(programs[worker]) - positions[worker])):
            trace.append((worker, programs[worker][positions[worker]]))
            positions[worker] += 1
        current = worker


def test_default_choice_continues_then_goes_round_robin() -> None:
    assert default_choice(FakeView(current=1, current_can_continue=True)) == 1
    assert default_choice(FakeView(current=1, runnable=(0, 2))) == 2
    assert default_choice(FakeView(current=2, runnable=(0, 1))) == 0
    assert default_choice(FakeView(current=-1, runnable=(1, 2))) == 1


def test_random_walk_is_reproducible_for_a_seed_and_differs_between_seeds() -> None:
    def choices(seed: int) -> list[int]:
        walk = RandomWalk(seed)
        walk.new_execution()
        return [walk.next_task(FakeView(step=i))[0] for i in range(40)]

    assert choices(1) == choices(1)
    assert choices(1) != choices(2)
    assert set(choices(1)) == {0, 1, 2}


def test_pct_runs_the_highest_priority_worker_until_a_change_point() -> None:
    pct = Pct(seed=3, depth=1, workers=3, expected_steps=10)  # depth 1: no change points
    pct.new_execution()
    first, lease = pct.next_task(FakeView())
    assert lease == UNLIMITED
    # with no change point the same worker keeps winning while it can run
    assert pct.next_task(FakeView(step=5, current=first, current_can_continue=True))[0] == first


def test_pct_change_points_preempt_and_yields_deprioritize() -> None:
    pct = Pct(seed=5, depth=2, workers=2, expected_steps=8)
    pct.new_execution()
    worker, lease = pct.next_task(FakeView(runnable=(0, 1), workers=2))
    assert 1 <= lease <= 8
    change = lease
    after = pct.next_task(FakeView(step=change, current=worker, runnable=(0, 1),
                                   current_can_continue=True, workers=2))[0]
    assert after != worker  # dropped below every initial priority
    # a runnable worker that yielded drops to the bottom as well
    pct = Pct(seed=5, depth=1, workers=2, expected_steps=8)
    pct.new_execution()
    top, _ = pct.next_task(FakeView(runnable=(0, 1), workers=2))
    assert pct.next_task(FakeView(step=1, current=top, runnable=(0, 1),
                                  current_can_continue=False, workers=2))[0] != top


def test_pct_finds_an_ordering_of_depth_two_in_a_few_executions() -> None:
    programs = [["a1", "a2", "a3"], ["b1", "b2", "b3"]]
    found = 0
    pct = Pct(seed=0, depth=2, workers=2, expected_steps=6)
    for _ in range(60):
        pct.new_execution()
        trace = _drive(pct, programs)
        found += trace.index((1, "b1")) == 1  # b1 right after a1, or a1 right after b1
        found += trace.index((0, "a1")) == 1
    assert found >= 3


def test_replay_checks_each_label_and_reports_where_it_diverged() -> None:
    steps = [Step(0, "x"), Step(1, "y")]
    replay = Replay(steps, execution_seed=7)
    assert replay.new_execution() and not replay.new_execution()
    replay = Replay(steps, execution_seed=7)
    replay.new_execution()
    assert replay.next_u64() == 7
    assert replay.next_task(FakeView(labels={0: "x"})) == (0, 1)
    with pytest.raises(ScheduleDiverged) as diverged:
        replay.next_task(FakeView(step=1, current=0, labels={1: "z"}))
    assert diverged.value.step == 1 and diverged.value.expected == Step(1, "y")
    assert "'z'" in diverged.value.actual
    with pytest.raises(ScheduleDiverged, match="elsewhere"):
        replay.next_task(FakeView(step=1, runnable=(0,), labels={0: "y"}))
    with pytest.raises(ScheduleEnded):
        replay.next_task(FakeView(step=2))


def test_replay_notes_the_steps_that_deviate_from_the_default_schedule() -> None:
    steps = [Step(0, "a"), Step(1, "b"), Step(0, "c")]
    replay = Replay(steps, 0)
    replay.new_execution()
    replay.next_task(FakeView(step=0, runnable=(0, 1), labels={0: "a"}))
    replay.next_task(FakeView(step=1, current=0, runnable=(0, 1), current_can_continue=True,
                              labels={1: "b"}))
    replay.next_task(FakeView(step=2, current=1, runnable=(0,), labels={0: "c"}))
    assert replay.deviations == [(1, 1)]  # switching away from a worker that could go on


def test_guided_applies_its_deviations_and_leases_up_to_the_next() -> None:
    guided = Guided([(2, 1)], execution_seed=0)
    guided.new_execution()
    assert guided.next_task(FakeView(step=0, runnable=(0, 1))) == (0, 2)
    assert guided.next_task(FakeView(step=2, current=0, runnable=(0, 1),
                                     current_can_continue=True)) == (1, UNLIMITED)
    assert guided.applied == [(2, 1)]


def _all_schedules(bound: int, programs: Sequence[Sequence[str]]) -> list[list[tuple[int, str]]]:
    search = Exhaustive(seed=0, bound=bound)
    found = []
    while search.new_execution():
        found.append(_drive(search, programs))
        assert len(found) < 1000
    return found


def test_exhaustive_search_enumerates_each_bounded_schedule_once() -> None:
    programs = [["a1", "a2"], ["b1", "b2"]]
    assert _all_schedules(0, programs) == [[(0, "a1"), (0, "a2"), (1, "b1"), (1, "b2")]]
    one = _all_schedules(1, programs)
    assert len(one) == len({tuple(s) for s in one})
    # every interleaving of two 2-step workers reachable with one deviation
    assert [(1, "b1"), (1, "b2"), (0, "a1"), (0, "a2")] in one
    assert [(0, "a1"), (1, "b1"), (1, "b2"), (0, "a2")] in one
    everything = _all_schedules(3, programs)
    assert len({tuple(s) for s in everything}) == 6  # C(4, 2) interleavings in all
