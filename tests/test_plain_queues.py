"""Queues and pipes under control: a wait the scheduler knows, racy twins found and replayed,
correct twins clean, waits nobody can end named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shmstress.controlled.strategies import DEFAULT, spec_named
from shmstress.plain.outcome import PlainEnd
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from shmstress.repro.plain_bundle import from_json, from_outcome, to_json
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict
from tests.plain_twins import assert_free_not_rarer

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
LIB_QUEUE = SCENARIOS / "lib_queue.py"
LIB_PIPE = SCENARIOS / "lib_pipe.py"
CHANNELS = SCENARIOS / "channels.py"
TWINS = [  # the library, its racy twin, its correct twin, how the racy one fails
    (LIB_QUEUE, "pipeline_racy", "pipeline_locked", "AssertionError: 3 items, 2 counted"),
    (LIB_QUEUE, "farm_done_first", "farm_done_after", "AssertionError: answers ["),
    (LIB_PIPE, "shared_end_racy", "shared_end_locked", "AssertionError: client "),
]


def spec(where: Path, function: str, **limits: int) -> PlainSpec:
    return PlainSpec(ScenarioRef.parse(f"{where}:{function}"), **limits)  # type: ignore[arg-type]


def search(where: Path, function: str, executions: int, seed: int = 1,
           **limits: int) -> PlainResult:
    return explore(spec(where, function, **limits),
                   Exploration(spec_named(DEFAULT), seed, executions))


@pytest.mark.parametrize(("where", "racy", "message"),
                         [(where, racy, message) for where, racy, _, message in TWINS])
def test_the_racy_twin_is_found_within_100_executions_and_replays(
        where: Path, racy: str, message: str) -> None:
    result = search(where, racy, 100)
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert failing.failure.end is PlainEnd.FAILED
    assert failing.failure.message.startswith(message), failing.failure.message
    bundle = from_json(json.loads(json.dumps(to_json(from_outcome(
        racy, result.spec, result.strategy, 1, result.failing_index, failing)))))
    report = replay_plain(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail
    assert [step.label for step in report.outcome.steps] == [s.label for s in failing.steps]


@pytest.mark.parametrize(("where", "correct"),
                         [(where, correct) for where, _, correct, _ in TWINS])
def test_the_correct_twin_runs_100_executions_clean(where: Path, correct: str) -> None:
    result = search(where, correct, 100)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 100}


@pytest.mark.parametrize(("where", "racy"), [(where, racy) for where, racy, _, _ in TWINS])
def test_free_mode_fails_the_racy_twin_at_least_as_often_as_a_plain_loop(
        where: Path, racy: str) -> None:
    assert_free_not_rarer(where, racy, 40)


@pytest.mark.parametrize("function", ["producer_consumer", "end_of_file"])
def test_correct_producers_and_consumers_run_clean(function: str) -> None:
    where = LIB_PIPE if function == "end_of_file" else LIB_QUEUE
    result = search(where, function, 100)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 100}


@pytest.mark.nightly
def test_a_correct_producer_and_consumer_runs_1000_executions_clean() -> None:
    result = search(LIB_QUEUE, "producer_consumer", 1000)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 1000}


def test_a_get_nobody_will_ever_put_for_is_no_progress_naming_the_queue() -> None:
    result = search(LIB_QUEUE, "nobody_puts", 5)
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert failing.failure.end is PlainEnd.NO_PROGRESS
    assert failing.failure.message == (
        "no progress: _sum_until_stop #1 waits to get from q, which is empty (nothing was "
        "ever put into it; main could put), and no process that could end the wait is left "
        "running")
    assert int(result.exit_code) == 1  # a failure, not a hang


def test_a_worker_blocked_on_a_full_queue_its_parent_joins_is_a_deadlock_naming_it() -> None:
    result = search(LIB_QUEUE, "joined_before_drained", 5)
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert failing.failure.end is PlainEnd.DEADLOCK
    assert failing.failure.message == (
        "deadlock: main holds nothing and waits to join _put_results #1; _put_results #1 "
        "holds nothing and waits to put into results, which is full (1 of 1; main got from "
        "it last)")


def test_a_reader_that_keeps_its_own_write_end_never_sees_the_end_of_the_file() -> None:
    result = search(LIB_PIPE, "end_of_file_never", 5)
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert failing.failure.end is PlainEnd.NO_PROGRESS
    assert "waits to receive on reader, where nothing is left" in failing.failure.message
    assert "it has an end that sends into it open itself" in failing.failure.message


@pytest.mark.parametrize(("where", "function", "waiter", "what"), [
    (LIB_QUEUE, "joined_before_get_large", "_put_a_big_result #1", "put into results"),
    (LIB_PIPE, "both_send_first_large", "main", "sent on their_reader"),
])
def test_more_than_an_os_pipe_holds_waits_for_its_reader_as_the_real_one_blocks(
        where: Path, function: str, waiter: str, what: str) -> None:
    """The guidelines' "joining processes that use queues", and two processes that each send
    the other more than a pipe holds before receiving: both hang for real."""
    result = search(where, function, 5)
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert failing.failure.end is PlainEnd.NO_PROGRESS
    assert failing.failure.message.startswith(
        f"no progress: {waiter} waits for what it {what} to be read: its OS pipe holds "
        "65,536 bytes, 100,013 are queued up to its last"), failing.failure.message


@pytest.mark.parametrize(("where", "function"), [
    (LIB_QUEUE, "joined_before_get_small"), (LIB_PIPE, "both_send_first_small")])
def test_what_an_os_pipe_holds_does_not_wait(where: Path, function: str) -> None:
    result = search(where, function, 30)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 30}


@pytest.mark.parametrize("function", [
    "the_import_time_message_is_there_every_time", "a_megabyte_with_the_reader_parked",
    "an_end_travels_in_a_queue", "timeouts_and_nowaits",
])
def test_queues_and_pipes_keep_their_guarantees(function: str) -> None:
    result = search(CHANNELS, function, 20)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 20}


def test_connection_wait_over_several_pipes_is_one_step_that_waits_for_any() -> None:
    result = search(LIB_PIPE, "waits_on_several", 30)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 30}


def test_a_lock_put_into_a_queue_is_refused_as_the_real_one_refuses_it() -> None:
    failing = search(CHANNELS, "a_lock_put_into_a_queue", 1).failing
    assert failing is not None and failing.failure is not None
    assert failing.failure.message == ("RuntimeError: Lock objects should only be shared "
                                       "between processes through inheritance")


def test_a_message_larger_than_the_mailbox_is_one_line_naming_the_option() -> None:
    failing = search(CHANNELS, "two_megabytes_in_a_one_mebibyte_mailbox", 1,
                     mailbox_mib=1).failing
    assert failing is not None and failing.failure is not None
    message = failing.failure.message
    assert "PlainLimitError: a message of 2,000,009 bytes does not fit in the board's " \
           "mailbox (0 of 1,048,576 bytes" in message, message
    assert message.endswith("--mailbox-mib makes it larger)"), message
