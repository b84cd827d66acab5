"""numpy over ``SharedMemory`` needs no flag: the scenario's own project is traced by
default, so a check-then-act on a seat array is found, shown with its elements, and
replayed; its locked twin stays clean and under control."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from shmstress.controlled.strategies import DEFAULT, spec_named
from shmstress.core.exit_reason import ExitCode
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.scenario import ScenarioRef, traced_code
from shmstress.plain.spec import PlainSpec
from shmstress.repro.plain_bundle import from_outcome
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict
from tests.plain_twins import assert_free_not_rarer

SEATS = Path(__file__).resolve().parent / "scenarios" / "lib_seats.py"


def _spec(function: str) -> PlainSpec:
    ref = ScenarioRef.parse(f"{SEATS}:{function}")
    return PlainSpec(ref, trace=traced_code(ref, ()))  # as `shmstress test` makes it


def test_the_racy_booking_is_found_without_a_flag_and_replays() -> None:
    spec = _spec("booking_racy")
    result = explore(spec, Exploration(spec_named(DEFAULT), 11, 100))
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert "2 tickets sold for 1 seat" in failing.failure.message
    whats = [step.what for step in failing.steps]
    assert "read seats[0]" in " ".join(whats) and any(
        w.startswith("write seats[0]") for w in whats), whats
    bundle = from_outcome("lib_seats.py:booking_racy", spec, result.strategy, 11,
                          result.failing_index, failing)
    assert replay_plain(bundle).verdict is Verdict.REPRODUCED


def test_free_mode_finds_the_racy_booking_at_least_as_often_as_a_plain_loop() -> None:
    """Both rarely (a check-then-act between two numpy lines; measured 3 in 100 free
    executions, 0 in 100 plain runs, on a loaded machine): rounds of 100, so free mode
    has its failures counted before it is compared."""
    assert_free_not_rarer(SEATS, "booking_racy", 100, trace=(str(SEATS),))


def test_the_locked_booking_is_clean_and_under_control() -> None:
    result = explore(_spec("booking_locked"), Exploration(spec_named(DEFAULT), 11, 100))
    assert result.failing is None, result.failing and result.failing.failure
    assert result.exit_code is ExitCode.CLEAN, result.uncontrolled


def test_the_command_finds_it_with_no_flag(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "shmstress.cli.main", "test",
                           f"{SEATS}:booking_racy", "--executions", "100", "--seed", "3",
                           "--out", str(tmp_path)],
                          check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == ExitCode.FAILURE, done.stdout + done.stderr
    assert "tickets sold for 1 seat" in done.stdout
