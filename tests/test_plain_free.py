"""Free mode for plain code: the OS schedules, one step at a time, and every failure replays."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shmstress.controlled.strategies import FreeRunSpec
from shmstress.plain.outcome import PlainEnd
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.session import PlainSession
from shmstress.plain.spec import FreeSpec, PlainSpec
from shmstress.repro.plain_bundle import PlainBundle, from_json, from_outcome, to_json
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "plain"
FREE = FreeRunSpec()


def run_free(where: Path, function: str, executions: int,
             seed: int = 1) -> tuple[PlainSpec, PlainResult]:
    spec = PlainSpec(ScenarioRef.parse(f"{where}:{function}"), free=FreeSpec(0.1))
    return spec, explore(spec, Exploration(FREE, seed, executions))


def bundle_of(spec: PlainSpec, result: PlainResult, seed: int = 1) -> PlainBundle:
    assert result.failing is not None
    return from_json(json.loads(json.dumps(to_json(from_outcome(
        "scenario", spec, FREE, seed, result.failing_index, result.failing)))))


@pytest.mark.parametrize("seed", range(3))
def test_free_mode_finds_the_lost_update_and_every_failure_replays_exactly(seed: int) -> None:
    spec, result = run_free(EXAMPLES / "counter.py", "racy", 400, seed=seed)
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert failing.failure.message.startswith("AssertionError: 2 increments, counter is 1")
    bundle = bundle_of(spec, result, seed)
    for _ in range(20 if seed == 0 else 3):
        report = replay_plain(bundle)
        assert report.verdict is Verdict.REPRODUCED, report.detail
        assert report.outcome.steps == failing.steps  # the same reads and writes, in order


def test_free_mode_reports_a_deadlock_and_a_lost_notify_and_they_replay() -> None:
    spec, result = run_free(EXAMPLES / "transfer.py", "opposite_order", 400)
    assert result.failing is not None and result.failing.failure is not None, result.ends
    assert result.failing.failure.end is PlainEnd.DEADLOCK
    assert replay_plain(bundle_of(spec, result)).verdict is Verdict.REPRODUCED
    spec, result = run_free(EXAMPLES / "handoff.py", "lost_notify", 400)
    assert result.failing is not None and result.failing.failure is not None, result.ends
    assert result.failing.failure.end is PlainEnd.NO_PROGRESS
    assert "waits on cv for a notify" in result.failing.failure.message
    assert replay_plain(bundle_of(spec, result)).verdict is Verdict.REPRODUCED


def test_a_step_lock_left_taken_by_a_killed_process_does_not_stall_the_next_execution() -> None:
    """A process killed while it holds free mode's step lock (a child dies with its parent
    when an unwinding main exits first) must not stall every later execution."""
    spec = PlainSpec(ScenarioRef.parse(f"{EXAMPLES / 'counter.py'}:locked"), free=FreeSpec(0.1),
                     stop_timeout=3)
    with PlainSession(spec) as session:
        assert session.execute(None, 0).failure is None
        assert session.board.step_lock.acquire(False)  # as the killed process left it
        outcome = session.execute(None, 1)
        assert outcome.failure is None, outcome.failure


@pytest.mark.parametrize(("where", "function"), [
    (EXAMPLES / "counter.py", "locked"),
    (EXAMPLES / "transfer.py", "same_order"),
    (EXAMPLES / "handoff.py", "checked"),
])
def test_correct_twins_stay_clean_in_free_mode(where: Path, function: str) -> None:
    _, result = run_free(where, function, 150)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 150}


def test_mode_specific_flags_are_refused_in_the_other_mode(tmp_path: Path) -> None:
    scenario = f"{EXAMPLES / 'counter.py'}:racy"
    for flags, problem in ((["--noise", "0.2"], "--noise only applies with --mode free"),
                           (["--mode", "free", "--depth", "4"],
                            "--depth only applies with --mode controlled"),
                           (["--mode", "free", "--noise", "2"], "--noise must be a probability")):
        done = subprocess.run([sys.executable, "-m", "shmstress", "test", scenario, *flags],
                              capture_output=True, text=True, timeout=120, check=False,
                              cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert problem in done.stderr and done.stderr.count("\n") == 1, done.stderr
