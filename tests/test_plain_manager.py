"""Managers under control: ``Manager()``, ``SyncManager``, a ``BaseManager`` with a registered
class, ``SharedMemoryManager``. Each proxy call is a step; the racy library code is found and
replays exactly, its correct twin stays clean, free mode finds the race at least as often as
plain Python does, and nothing a manager made is left behind."""

from __future__ import annotations

import importlib.util
import json
import os
from multiprocessing import util
from pathlib import Path

import pytest

from shmstress.controlled.strategies import RandomWalkSpec, exploring_strategy
from shmstress.plain.outcome import PlainEnd
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.session import PlainSession
from shmstress.plain.spec import PlainSpec
from shmstress.repro.plain_bundle import from_json, from_outcome, to_json
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict
from tests.plain_twins import assert_free_not_rarer

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
LIBRARY = SCENARIOS / "lib_manager.py"


def spec(function: str, where: Path = LIBRARY, **options: object) -> PlainSpec:
    return PlainSpec(ScenarioRef.parse(f"{where}:{function}"), **options)  # type: ignore[arg-type]


def search(function: str, executions: int, seed: int = 0, **options: object) -> PlainResult:
    """Under the default strategy (the portfolio)."""
    return explore(spec(function, **options), Exploration(seed=seed, executions=executions))


RACY = {
    "dict_racy": "AssertionError: 3 jobs, counted ",
    "list_racy": "AssertionError: capacity 1, claimed ['job', 'job']",
    "namespace_racy": "AssertionError: 2 jobs, total 1",
    "registered_racy": "AssertionError: 2 jobs, tally 1",
    "shareable_racy": "AssertionError: 2 jobs, count 1",
}


@pytest.mark.parametrize("function", sorted(RACY))
def test_racy_manager_code_is_found_within_100_executions_and_replays_exactly(
        function: str) -> None:
    result = search(function, 100)
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert failing.failure.message.startswith(RACY[function]), failing.failure.message
    bundle = from_json(json.loads(json.dumps(to_json(from_outcome(
        function, result.spec, result.strategy, 0, result.failing_index, failing)))))
    for _ in range(3):
        report = replay_plain(bundle)
        assert report.verdict is Verdict.REPRODUCED, report.detail
        assert report.outcome.steps == failing.steps  # the same calls, the same values


def test_a_proxy_call_is_one_step_named_after_the_object_its_method_and_key() -> None:
    result = search("dict_racy", 100)
    failing = result.failing
    assert failing is not None
    steps = [(index, step) for index, step in enumerate(failing.steps) if step.worker != 0]
    reads = [(i, step) for i, step in steps if step.label == "call _counts.get('done')"]
    writes = [(i, step) for i, step in steps if step.label == "call _counts.__setitem__('done')"]
    assert len(reads) == len(writes) == 3, [step.label for _, step in steps]
    assert {(step.file, step.line) for _, step in reads + writes} == {("lib_manager.py", 29)}
    assert all(step.value in (0, 1, 2) for _, step in reads + writes)  # what was read, stored
    # a read-modify-write is two steps, and another process's write came between them
    read_at = {step.worker: index for index, step in reads}
    write_at = {step.worker: index for index, step in writes}
    assert any(read_at[worker] < write_at[other] < write_at[worker]
               for worker in read_at for other in write_at if other != worker)


CORRECT = ("dict_locked", "list_locked", "namespace_locked", "registered_atomic",
           "shareable_locked")


@pytest.mark.parametrize("function", CORRECT)
def test_correct_manager_code_runs_100_executions_clean(function: str) -> None:
    result = search(function, 100, seed=1)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 100}


@pytest.mark.parametrize(("where", "function"), [
    (LIBRARY, "sync_objects"),  # Event, Semaphore, Condition, Barrier, Value of a manager
    (LIBRARY, "pickled_proxies"),  # a dict proxy and a manager's Lock, pickled to a child
    (LIBRARY, "nested_and_iterated"),  # a list proxy in a dict; iteration; an AutoProxy
    (SCENARIOS / "lib_manager_module.py", "module_manager"),  # started at import
])
def test_what_managers_offer_works_as_it_does_for_real(where: Path, function: str) -> None:
    result = explore(spec(function, where), Exploration(seed=2, executions=30))
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 30}


@pytest.mark.skipif(importlib.util.find_spec("shmstress.plain.sync.queue") is None,
                    reason="a manager's Queue is the context's JoinableQueue: it waits for the "
                           "instrumented multiprocessing.Queue (issue 28, another branch)")
def test_a_managers_queue_carries_a_pipeline() -> None:
    result = search("queue_pipeline", 100)
    assert result.failing is None, result.failing and result.failing.failure


def test_free_mode_finds_the_racy_dict_at_least_as_often_as_a_plain_loop() -> None:
    assert_free_not_rarer(LIBRARY, "dict_racy", 60)


def test_nothing_a_manager_made_is_left_behind() -> None:
    """After each execution the segment table has nothing left to unlink (``shutdown``
    unlinked the stores and the SharedMemoryManager's segments); after the runs none of the
    segments any execution created exists, no socket file was made, and no process is left
    (``conftest.no_leaks``)."""
    sockets = util.get_temp_dir()  # where a real manager's listener would be; forks share it
    before = set(os.listdir(sockets))
    made: dict[str, list[str]] = {}
    for function in ("dict_locked", "shareable_racy", "nested_and_iterated"):
        the_spec = spec(function)
        walk = exploring_strategy(RandomWalkSpec(), 0, the_spec.max_processes,
                                  the_spec.max_steps, "plain")
        with PlainSession(the_spec) as session:
            for _ in range(5):
                assert walk.new_execution()
                outcome = session.execute(walk, walk.next_u64())
                assert outcome.end in (PlainEnd.FINISHED, PlainEnd.FAILED), outcome.failure
                assert session.runtime.segments_left(0) == [], function
            made[function] = [line[1:] for line in session.created.path.read_text().splitlines()
                              if line.startswith("+")]
    # a store per manager, and the list's and the block's segments, in each execution
    assert [len(names) for names in made.values()] == [5, 5 * 3, 5 * 2], made
    assert not [name for names in made.values() for name in names
                if os.path.exists(f"/dev/shm/{name.lstrip('/')}")]
    assert set(os.listdir(sockets)) == before


def test_an_object_that_does_not_pickle_is_refused_in_one_line() -> None:
    result = search("unpicklable_object", 1)
    failing = result.failing
    assert failing is not None and failing.failure is not None
    message = failing.failure.message
    assert message.startswith("shmstress.core.errors.UncontrolledError: shmstress: Guarded ")
    assert "does not pickle (TypeError: cannot pickle '_thread.lock' object)" in message


def test_a_method_that_takes_steps_of_its_own_is_refused_when_another_call_gets_in() -> None:
    result = search("stepping_method", 100)
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert "UncontrolledError: shmstress: Stepping.slow_add on stepping took steps of its own" \
        in failing.failure.message


def test_objects_that_outgrow_their_place_move_and_the_store_compacts() -> None:
    result = search("growing_values", 5)
    assert result.failing is None, result.failing and result.failing.failure
    result = search("too_big_a_value", 1)
    assert result.failing is not None and result.failing.failure is not None
    assert result.failing.failure.message == (
        "shmstress.core.errors.PlainLimitError: blobs does not fit in its manager's store "
        "under shmstress (1 MiB of pickled objects per manager)")
