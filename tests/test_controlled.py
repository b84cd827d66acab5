"""Controlled mode against real worker processes: determinism, state reset between
executions, clean correct variants, deadlocks, step bounds, crashes and hangs."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.controlled.execution import ExecutionEnd, ExecutionOutcome, PhasePlan
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.result import ControlledResult
from shmstress.controlled.runner import prepare, run_controlled, session_spec
from shmstress.controlled.session import Session
from shmstress.controlled.strategies import (
    ExhaustiveSpec,
    PctSpec,
    RandomWalk,
    RandomWalkSpec,
    Replay,
    exploring_strategy,
    spec_named,
)
from shmstress.core.config import RunConfig
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import ExitReason
from tests.helpers import StepByStep

TRACKERS = Path(__file__).parent / "trackers"
LOCK_ORDER = f"{TRACKERS / 'lock_order.py'}:LockOrder"
TICKERS = f"{TRACKERS / 'tickers.py'}:Tickers"
SMALL = {"counts": {"binder": 1, "informer": 1, "gatherer": 1},
         "params": {"nodes": 1, "devices-per-node": 2}}

pytestmark = pytest.mark.stress


def _executions(variant: str, strategy: str, seed: int, count: int) -> list[ExecutionOutcome]:
    config, tracker_cls, workers = prepare(RunConfig(tracker="dra", variant=variant, seed=seed))
    explorer = exploring_strategy(spec_named(strategy), seed, len(workers), 5000)
    outcomes = []
    with Session(session_spec(config, tracker_cls, workers, 5000)) as session:
        for _ in range(count):
            explorer.new_execution()
            outcomes.append(session.execute(explorer, explorer.next_u64(), PhasePlan(100)))
    return outcomes


@pytest.mark.parametrize("strategy", ["pct", "random_walk", "portfolio"])
def test_same_seed_and_strategy_give_the_same_step_trace(strategy: str) -> None:
    first = _executions("fixed", strategy, seed=11, count=5)
    second = _executions("fixed", strategy, seed=11, count=5)
    assert [o.steps for o in first] == [o.steps for o in second]
    assert len({o.steps for o in first}) == 5  # the executions differ from one another
    assert all(len(o.steps) > 50 for o in first)
    assert _executions("fixed", strategy, seed=12, count=1)[0].steps != first[0].steps


def test_a_scripted_random_walk_replays_step_for_step() -> None:
    config, tracker_cls, workers = prepare(RunConfig(tracker="dra", variant="fixed", seed=3))
    walk = RandomWalk(3)
    with Session(session_spec(config, tracker_cls, workers, 5000)) as session:
        for _ in range(3):
            walk.new_execution()
            seed = walk.next_u64()
            walked = session.execute(walk, seed, PhasePlan(100))
            replayed = session.execute(Replay(walked.steps, seed), seed,
                                       PhasePlan(100, forced=walked.phase_changes))
            assert replayed.divergence is None
            assert replayed.steps == walked.steps
            # preemptions counted by the workers' own handoffs, as the coordinator counts them
            assert replayed.preemptions == walked.preemptions > 0


@pytest.mark.parametrize("variant", ["gather-unchecked", "events-unordered", "original"])
def test_random_walk_finds_every_dra_race_and_the_failure_reproduces(variant: str) -> None:
    result = run_controlled(RunConfig(tracker="dra", variant=variant, seed=0),
                            ControlledOptions(RandomWalkSpec(), executions=300))
    assert result.failing is not None and result.failing.reproduced
    assert result.run.violations[0].invariant == "gather-complete"


def _ticker_frequencies(walk: RandomWalk | StepByStep) -> tuple[list[float], float]:
    """Over the steps while all three tickers are unfinished (all of them runnable): how
    often each takes a step, and how often a step's worker is the previous step's."""
    config, tracker_cls, workers = prepare(RunConfig(
        tracker=TICKERS, seed=0, counts={"ticker": 3}, params={"ticks": 200}))
    taken: list[int] = []
    stays = pairs = 0
    with Session(session_spec(config, tracker_cls, workers, 1000)) as session:
        for _ in range(20):
            walk.new_execution()
            outcome = session.execute(walk, walk.next_u64(), PhasePlan(1000))
            assert outcome.end is ExecutionEnd.FINISHED
            left = [200, 200, 200]
            run: list[int] = []
            for step in outcome.steps:
                left[step.worker] -= 1
                if not all(left):
                    break
                run.append(step.worker)
            taken += run
            stays += sum(a == b for a, b in itertools.pairwise(run))
            pairs += len(run) - 1
    return [taken.count(w) / len(taken) for w in range(3)], stays / pairs


def test_scripted_random_walk_picks_always_runnable_workers_as_the_step_by_step_one() -> None:
    scripted, scripted_stays = _ticker_frequencies(RandomWalk(8))
    stepwise, stepwise_stays = _ticker_frequencies(StepByStep(8))
    for frequency, reference in zip(scripted, stepwise, strict=True):
        assert frequency == pytest.approx(1 / 3, abs=0.04)  # ~10,000 steps each: wide
        assert frequency == pytest.approx(reference, abs=0.05)
    assert scripted_stays == pytest.approx(1 / 3, abs=0.04)
    assert scripted_stays == pytest.approx(stepwise_stays, abs=0.05)


def test_a_found_failure_is_the_same_twice() -> None:
    runs = [run_controlled(RunConfig(tracker="dra", variant="gather-unchecked", seed=2),
                           ControlledOptions(PctSpec(), executions=200))
            for _ in range(2)]
    failing = [r.failing for r in runs]
    assert failing[0] is not None and failing[1] is not None
    assert failing[0].index == failing[1].index
    assert failing[0].reproduced  # the recorded re-run under replay failed the same way
    assert failing[0].outcome.steps == failing[1].outcome.steps
    assert runs[0].run.violations[0].fields == runs[1].run.violations[0].fields


def test_each_execution_starts_from_the_same_state_as_a_fresh_session() -> None:
    """The fifth execution of a long-lived session replays in a brand-new session."""
    fifth = _executions("events-unordered", "pct", seed=5, count=5)[-1]
    config, tracker_cls, workers = prepare(
        RunConfig(tracker="dra", variant="events-unordered", seed=5))
    replay = Replay(fifth.steps, fifth.execution_seed)
    replay.new_execution()
    with Session(session_spec(config, tracker_cls, workers, len(fifth.steps) + 1)) as session:
        again = session.execute(replay, fifth.execution_seed,
                                PhasePlan(100, forced=fifth.phase_changes))
    assert again.divergence is None
    assert again.steps == fifth.steps
    assert again.end == fifth.end


@pytest.mark.parametrize("variant", ["fixed", "single-lock"])
def test_correct_variants_survive_pct(variant: str) -> None:
    result = run_controlled(RunConfig(tracker="dra", variant=variant, seed=1),
                            ControlledOptions(PctSpec(depth=3), executions=150))
    assert result.failing is None, result.run.violations
    assert result.ends == {"finished": 150}  # every one settled and was checked at rest
    assert result.run.exit_reason is ExitReason.EXECUTIONS_DONE
    assert result.exit_code == 0


def _bounded_search(variant: str, bound: int) -> ControlledResult:
    config = RunConfig(tracker="dra", variant=variant, seed=0, max_points=12, **SMALL)  # type: ignore[arg-type]
    return run_controlled(config, ControlledOptions(ExhaustiveSpec(bound=bound),
                                                    executions=5000, run_steps=12))


@pytest.mark.parametrize("variant", ["fixed", "single-lock"])
def test_correct_variants_survive_the_whole_bounded_search(variant: str) -> None:
    unbounded_orders = _bounded_search(variant, 0)  # only the free switches vary
    result = _bounded_search(variant, 1)
    assert result.failing is None, result.run.violations
    assert result.exhausted and unbounded_orders.exhausted
    assert result.ends == {"finished": result.executions}  # all ran to the end and were checked
    # each of the ~60 steps of a bound-0 schedule is a place for the one preemption
    assert result.executions > 5 * unbounded_orders.executions
    assert result.executions > 400


def test_bounded_search_finds_the_seed_race_on_a_small_scenario() -> None:
    config = RunConfig(tracker="dra", variant="gather-unchecked", seed=0, **SMALL)  # type: ignore[arg-type]
    result = run_controlled(config, ControlledOptions(ExhaustiveSpec(bound=1),
                                                      executions=5000, run_steps=30))
    assert result.failing is not None
    assert result.run.violations[0].invariant == "gather-complete"
    assert result.failing.outcome.preemptions <= 1


def test_lock_order_inversion_is_a_deadlock_naming_both_workers() -> None:
    result = run_controlled(RunConfig(tracker=LOCK_ORDER, variant="inverted", seed=0),
                            ControlledOptions(RandomWalkSpec(), executions=200))
    assert result.run.exit_reason is ExitReason.DEADLOCK
    assert result.exit_code == 1
    (deadlock,) = result.run.violations
    assert deadlock.invariant == "deadlock"
    assert "forward #1 waits at 'take" in deadlock.message
    assert "backward #1 waits at 'take" in deadlock.message
    assert "held by backward #1" in deadlock.message and "held by forward #1" in deadlock.message


def test_consistent_lock_order_never_deadlocks_within_the_bound() -> None:
    result = run_controlled(RunConfig(tracker=LOCK_ORDER, variant="ordered", seed=0),
                            ControlledOptions(ExhaustiveSpec(bound=3),
                                              executions=20000))
    assert result.exhausted and result.failing is None
    assert result.run.exit_reason is ExitReason.SEARCH_COMPLETE


def test_an_execution_that_does_not_finish_ends_at_the_step_bound() -> None:
    result = run_controlled(RunConfig(tracker="dra", variant="fixed", seed=0, max_points=50),
                            ControlledOptions(PctSpec(), executions=3,
                                              run_steps=50, max_steps=60))
    assert result.ends == {"step-bound": 3}
    assert result.run.exit_reason is ExitReason.STEP_BOUND
    assert result.exit_code == 0


def test_a_role_that_raises_is_a_failure_with_its_traceback() -> None:
    tracker = f"{TRACKERS / 'misbehaving.py'}:Crashing"
    result = run_controlled(RunConfig(tracker=tracker, seed=0, params={"steps": 20}),
                            ControlledOptions(PctSpec(), executions=10))
    assert result.run.exit_reason is ExitReason.VIOLATION
    assert result.exit_code == 1
    found = result.run.principal_violation
    assert found is not None and found.invariant == "crash"
    assert "RuntimeError: worker broke on purpose at misbehaving.py:" in found.message
    assert any("worker broke on purpose" in crash for crash in result.run.crashes)
    assert not any("controlled/worker.py" in crash for crash in result.run.crashes)


def test_a_step_without_points_is_refused_before_anything_starts() -> None:
    tracker = f"{TRACKERS / 'misbehaving.py'}:Stubborn"
    with pytest.raises(ConfigError, match="point"):
        run_controlled(RunConfig(tracker=tracker, seed=0),
                       ControlledOptions(PctSpec(), executions=2))


def test_a_worker_that_never_reaches_its_next_point_is_reported_hung() -> None:
    config = RunConfig(tracker=LOCK_ORDER, variant="ordered", seed=0, stop_timeout=0.5,
                       params={"rounds": 8, "hang-after": 6})
    result = run_controlled(config, ControlledOptions(PctSpec(), executions=2))
    assert result.run.exit_reason is ExitReason.TIMEOUT
    assert result.exit_code == 4
    assert "did not reach its next point" in result.run.crashes[0]


def test_the_cpu_affinity_is_restored() -> None:
    before = os.sched_getaffinity(0)
    run_controlled(RunConfig(tracker="dra", variant="fixed", seed=0),
                   ControlledOptions(PctSpec(), executions=2))
    assert os.sched_getaffinity(0) == before


def test_outcome_ends_are_named() -> None:
    assert {e.value for e in ExecutionEnd} >= {"finished", "violation", "deadlock", "step-bound"}


@pytest.mark.parametrize(("args", "fragment"), [
    (["--strategy", "pct", "--depth", "0"], "--depth must be >= 1"),
    (["--strategy", "exhaustive", "--bound", "-1"], "--bound must be >= 0"),
    (["--executions", "0"], "--executions must be >= 1"),
    (["--points", "50", "--max-steps", "40"], "--max-steps must be >"),
])
def test_bad_controlled_options_are_one_line_and_exit_2(
    args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--mode", "controlled", "--variant", "fixed", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and "\n" not in err and "Traceback" not in err
