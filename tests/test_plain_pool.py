"""Pool and ProcessPoolExecutor under control: their threads folded into the caller's steps,
their workers ordinary controlled processes; racy twins found and replayed, correct ones
clean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shmstress.controlled.strategies import DEFAULT, spec_named
from shmstress.plain.outcome import PlainEnd, PlainOutcome
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from shmstress.repro.plain_bundle import from_json, from_outcome, to_json
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict
from tests.plain_twins import assert_free_not_rarer

LIB_POOL = Path(__file__).resolve().parent / "scenarios" / "lib_pool.py"
CHANNELS = Path(__file__).resolve().parent / "scenarios" / "channels.py"
TWINS = [("pool_racy", "pool_locked"), ("executor_racy", "executor_locked")]


def search(function: str, executions: int, seed: int = 1) -> PlainResult:
    return explore(PlainSpec(ScenarioRef.parse(f"{LIB_POOL}:{function}")),
                   Exploration(spec_named(DEFAULT), seed, executions))


@pytest.mark.parametrize("racy", [racy for racy, _ in TWINS])
def test_an_unlocked_shared_value_bumped_by_pool_workers_is_found_and_replays(
        racy: str) -> None:
    result = search(racy, 100)
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert failing.failure.end is PlainEnd.FAILED
    assert failing.failure.message.startswith("AssertionError: 4 jobs, "), \
        failing.failure.message
    worker = "pool_worker #" if racy.startswith("pool") else "executor_worker #"
    assert any(step.label == "write done.value" and failing.who(step.worker).startswith(worker)
               for step in failing.steps)
    bundle = from_json(json.loads(json.dumps(to_json(from_outcome(
        racy, result.spec, result.strategy, 1, result.failing_index, failing)))))
    report = replay_plain(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail


@pytest.mark.parametrize("correct", [correct for _, correct in TWINS])
def test_the_locked_twin_runs_100_executions_clean(correct: str) -> None:
    result = search(correct, 100)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 100}


@pytest.mark.parametrize("racy", [racy for racy, _ in TWINS])
def test_free_mode_fails_the_racy_twin_at_least_as_often_as_a_plain_loop(racy: str) -> None:
    assert_free_not_rarer(LIB_POOL, racy, 40)


@pytest.mark.parametrize("function", ["pool_everything", "pool_maxtasks",
                                      "executor_everything"])
def test_every_way_in_keeps_its_results(function: str) -> None:
    result = search(function, 30)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 30}


def test_the_workers_are_scheduled_processes_fed_one_step_a_task() -> None:
    seen: list[PlainOutcome] = []
    explore(PlainSpec(ScenarioRef.parse(f"{LIB_POOL}:pool_locked")),
            Exploration(spec_named(DEFAULT), 1, 1), witness=seen.append)
    (outcome,) = seen
    assert outcome.processes == ("main", "pool_worker #1", "pool_worker #2")
    labels = [step.label for step in outcome.steps]
    assert labels.count("put to pool.tasks") == 4  # a task a step, handed over by map
    assert labels.count("get from pool.results") == 4  # a result a step, taken by its get
    assert "terminate pool_worker #1" in labels  # the with block's exit, as the real one


def test_no_helper_thread_is_started() -> None:
    result = explore(PlainSpec(ScenarioRef.parse(f"{CHANNELS}:no_helper_threads")),
                     Exploration(spec_named(DEFAULT), 1, 5))
    assert result.failing is None, result.failing and result.failing.failure
