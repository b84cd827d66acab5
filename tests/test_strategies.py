"""Strategies on a simulated scheduler: their choices, leases, divergence checks and search."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from math import comb

import pytest

from shmstress.controlled.strategies import (
    Exhaustive,
    Guided,
    Pct,
    RandomWalk,
    Replay,
    ScheduleDiverged,
    ScheduleEnded,
    Strategy,
)
from shmstress.controlled.strategies.base import UNLIMITED, default_choice, seeded_rng
from shmstress.core.trace import Step


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

    def who(self, worker: int) -> str:
        return f"role #{worker + 1}"

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
    pct = Pct(seed=3, depth=1, workers=3, max_steps=10)  # depth 1: no change points
    pct.new_execution()
    first, lease = pct.next_task(FakeView())
    assert lease == UNLIMITED
    # with no change point the same worker keeps winning while it can run
    assert pct.next_task(FakeView(step=5, current=first, current_can_continue=True))[0] == first


def test_pct_change_points_drop_the_running_worker_below_the_others() -> None:
    pct = Pct(seed=5, depth=2, workers=2, max_steps=8)
    pct.new_execution()
    worker, lease = pct.next_task(FakeView(runnable=(0, 1), workers=2))
    assert 1 <= lease <= 8
    change = lease
    after = pct.next_task(FakeView(step=change, current=worker, runnable=(0, 1),
                                   current_can_continue=True, workers=2))[0]
    assert after != worker


def test_a_yielding_worker_is_demoted_below_every_other_by_default() -> None:
    pct = Pct(seed=5, depth=1, workers=3, max_steps=8)
    pct.new_execution()
    top, _ = pct.next_task(FakeView(runnable=(0, 1, 2), workers=3))
    # top yielded: it drops below both others, who then run without a short lease
    second, lease = pct.next_task(FakeView(step=1, current=top, runnable=(0, 1, 2), workers=3))
    assert second != top and lease == UNLIMITED
    # the second yields too: it drops below top, so the third runs, then top before it
    third, _ = pct.next_task(FakeView(step=2, current=second, runnable=(0, 1, 2), workers=3))
    assert third not in (top, second)
    assert pct.next_task(FakeView(step=3, current=third, runnable=(0, 1, 2), workers=3))[0] == top


def test_a_yielding_worker_steps_aside_until_another_makes_progress() -> None:
    pct = Pct(seed=5, depth=1, workers=2, max_steps=8, spin="aside")
    pct.new_execution()
    top, _ = pct.next_task(FakeView(runnable=(0, 1), workers=2))
    other = 1 - top
    # top yielded: the other runs, one step at a time while top outranks it
    assert pct.next_task(FakeView(step=1, current=top, runnable=(0, 1), workers=2)) == (other, 1)
    # the other took a step without yielding: top, which kept its priority, looks again
    assert pct.next_task(FakeView(step=2, current=other, runnable=(0, 1),
                                  current_can_continue=True, workers=2))[0] == top
    # both spin: they take turns by priority rather than stalling
    assert pct.next_task(FakeView(step=3, current=top, runnable=(0, 1), workers=2))[0] == other
    assert pct.next_task(FakeView(step=4, current=other, runnable=(0, 1), workers=2))[0] == top


def test_pct_draws_the_first_change_points_from_the_step_bound_then_learns_k() -> None:
    pct = Pct(seed=1, depth=3, workers=2, max_steps=5000)
    assert pct.k == 5000  # nothing seen yet: the bound every execution obeys
    pct.new_execution()
    trace = _drive(pct, [["a1", "a2", "a3"], ["b1", "b2", "b3"]])
    assert len(trace) == 6
    assert 1 <= pct.k <= 6  # the longest execution, to its last step with a choice


def _lower_quantile(trials: int, p: float, alpha: float) -> int:
    """The largest q with P(Binomial(trials, p) < q) <= alpha."""
    below = 0.0
    for q in range(trials + 1):
        mass = comb(trials, q) * p ** q * (1 - p) ** (trials - q)
        if below + mass > alpha:
            return q
        below += mass
    return trials


# Orderings of a1..a3 and b1..b3 (two workers, k = 6 steps) of depth d: d ordering
# constraints, which take d-1 preemptions (b runs between a1 and a2; for depth 3 a2 also runs
# between b2 and b3).
DEPTH_BUGS = {
    2: lambda order: order.index("a1") < order.index("b1") < order.index("b2") < order.index("a2"),
    3: lambda order: (order.index("a1") < order.index("b1") < order.index("b2")
                      < order.index("a2") < order.index("b3")),
}


@pytest.mark.parametrize("depth", sorted(DEPTH_BUGS))
def test_pct_finds_a_bug_of_depth_d_at_least_as_often_as_the_papers_bound(depth: int) -> None:
    programs = [["a1", "a2", "a3"], ["b1", "b2", "b3"]]
    workers, k = len(programs), sum(len(p) for p in programs)
    bound = 1 / (workers * k ** (depth - 1))  # Burckhardt et al., ASPLOS 2010, theorem 4
    trials = 3000
    pct = Pct(seed=0, depth=depth, workers=workers, max_steps=k)
    hits = 0
    for _ in range(trials):
        pct.new_execution()
        hits += DEPTH_BUGS[depth]([label for _, label in _drive(pct, programs)])
    # a binomial with the bound's p falls below this with probability at most 1e-9
    assert hits >= _lower_quantile(trials, bound, 1e-9), (hits, trials * bound)


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
    assert "expected 'y' by role #2, but role #2 is at 'z'" in str(diverged.value)
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


def _interleavings_within(m: int, n: int, bound: int) -> int:
    """Interleavings of an m-step and an n-step worker with at most ``bound`` preemptions:
    one with r runs switches r-1 times, and only the switch after a worker's last run is
    free (it finished), so it has r-2 preemptions."""
    total = 0
    for runs in range(2, bound + 3):
        a_runs, b_runs = (runs + 1) // 2, runs // 2  # a starts; then b starts, symmetrically
        for first, second in ((a_runs, b_runs), (b_runs, a_runs)):
            total += comb(m - 1, first - 1) * comb(n - 1, second - 1)
    return total


def test_exhaustive_search_enumerates_each_bounded_schedule_once() -> None:
    programs = [["a1", "a2"], ["b1", "b2"]]
    assert _all_schedules(0, programs) == [[(0, "a1"), (0, "a2"), (1, "b1"), (1, "b2")],
                                           [(1, "b1"), (1, "b2"), (0, "a1"), (0, "a2")]]
    one = _all_schedules(1, programs)
    assert len(one) == len({tuple(s) for s in one})
    assert [(0, "a1"), (1, "b1"), (1, "b2"), (0, "a2")] in one


@pytest.mark.parametrize(("m", "n"), [(2, 2), (3, 3), (2, 4), (4, 3)])
@pytest.mark.parametrize("bound", [0, 1, 2, 3])
def test_exhaustive_search_counts_the_known_number_of_schedules(m: int, n: int, bound: int
                                                                 ) -> None:
    programs = [[f"a{i}" for i in range(m)], [f"b{i}" for i in range(n)]]
    schedules = {tuple(s) for s in _all_schedules(bound, programs)}
    assert len(schedules) == _interleavings_within(m, n, bound)
    assert len(_all_schedules(m + n, programs)) == comb(m + n, m)  # every interleaving


def test_switching_after_a_worker_finishes_is_not_a_preemption() -> None:
    assert len(_all_schedules(0, [["a"], ["b"], ["c"]])) == 6  # every order, at bound 0


def test_a_yield_hands_over_in_turn_for_free_and_out_of_turn_for_one_unit() -> None:
    yielded = FakeView(step=3, current=0, runnable=(0, 1, 2), current_can_continue=False)
    blocked = FakeView(step=3, current=0, runnable=(1, 2))
    search = Exhaustive(seed=0, bound=0)
    assert search.new_execution()
    assert search.next_task(yielded) == (1, UNLIMITED)  # the next in turn; nothing to vary
    search = Exhaustive(seed=0, bound=0)
    chosen = []
    while search.new_execution():
        chosen.append(search.next_task(blocked)[0])
    assert chosen == [1, 2]  # after a block every worker is free to choose
    search = Exhaustive(seed=0, bound=1)
    chosen = []
    while search.new_execution():
        chosen.append(search.next_task(yielded)[0])
    assert chosen == [1, 0, 2]


def _walk_frequencies(scripted: bool, ends_early: bool, steps: int = 30_000
                      ) -> tuple[list[float], float]:
    """Follow random walk over three always-runnable workers as the coordinator and workers
    do: (how often each worker takes a step, how often a step's worker is the previous
    step's). ``ends_early``: the workers end scripts at points the history decides (as a
    lock or a finished worker would), dropping the rest of each."""
    walk = RandomWalk(seed=4)
    walk.new_execution()
    taken: list[int] = []
    while len(taken) < steps:
        view = FakeView(step=len(taken), current=taken[-1] if taken else -1)
        if not scripted:
            taken.append(walk.next_task(view)[0])
            continue
        script = walk.next_script(view, 1 << 30)
        taken.append(script[0])
        for choice in script[1:]:
            if ends_early and len(taken) % 7 == 0 and taken[-1] == 0:
                break  # decided by what ran, never by the entry it would use
            taken.append(choice)
    counts = [taken.count(w) / len(taken) for w in range(3)]
    stays = sum(a == b for a, b in itertools.pairwise(taken)) / (len(taken) - 1)
    return counts, stays


@pytest.mark.parametrize("ends_early", [False, True])
def test_a_scripted_random_walk_picks_like_the_step_by_step_one(ends_early: bool) -> None:
    stepwise, stepwise_stays = _walk_frequencies(scripted=False, ends_early=False)
    scripted, scripted_stays = _walk_frequencies(scripted=True, ends_early=ends_early)
    for frequency, reference in zip(scripted, stepwise, strict=True):
        assert frequency == pytest.approx(1 / 3, abs=0.02)  # ~8 standard deviations
        assert frequency == pytest.approx(reference, abs=0.03)
    # the length of a worker's run: the next step is its own with probability 1/3, as ever
    assert scripted_stays == pytest.approx(1 / 3, abs=0.02)
    assert scripted_stays == pytest.approx(stepwise_stays, abs=0.03)


def test_a_script_is_reproducible_for_a_seed_bounded_by_the_limit_and_adapts() -> None:
    def scripts(seed: int) -> list[list[int]]:
        walk = RandomWalk(seed)
        walk.new_execution()
        out, step = [], 0
        for used in (8, 16, 3, 6, 6):  # steps each script lasted (the 3rd ended early)
            out.append(walk.next_script(FakeView(step=step), 1000))
            step += used
        return out

    first = scripts(1)
    assert first == scripts(1) and first != scripts(2)
    assert [len(s) for s in first] == [8, 16, 32, 6, 12]  # doubles while used up
    walk = RandomWalk(1)
    walk.new_execution()
    assert len(walk.next_script(FakeView(), 3)) == 3  # never past the coordinator's limit
    assert walk.next_script(FakeView(step=3, runnable=(2,)), 100) == [2] * 16  # no choice


@pytest.mark.parametrize("workers", [2, 3, 4, 5])
def test_a_scripts_picks_are_the_draws_randrange_would_make(workers: int) -> None:
    """The script's inlined draws are Random.randrange's, draw for draw: uniform over the
    runnable workers, and the same trace for a seed as the step-by-step draws gave."""
    runnable = tuple(range(10, 10 + workers))
    walk = RandomWalk(seed=9)
    walk.new_execution()
    reference = seeded_rng(9, "random_walk")
    for step in (0, 8, 24):
        script = walk.next_script(FakeView(step=step, runnable=runnable), 1000)
        assert script == [runnable[reference.randrange(workers)] for _ in script]
