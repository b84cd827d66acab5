"""No progress is a failure: an execution at its step bound that cannot go on (a lost
wake-up: the consumer spins, yielding, for a wake-up nobody will send) ends as a
``no-progress`` violation whose bundle replays to the same verdict; an execution that is
only long still ends at the step bound; ``shmstress check`` tells the two apart."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.progress import (
    PROBE_ROUNDS,
    ProbeEnd,
    ProbeResult,
    probe,
    stall_start,
)
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies.base import StrategySpec
from shmstress.core.config import RunConfig
from shmstress.core.exit_reason import ExitReason
from shmstress.core.trace import Step
from shmstress.repro.bundle import from_controlled
from shmstress.repro.replay import Verdict, replay_bundle
from tests.helpers import render_snippet

TRACKERS = Path(__file__).parent / "trackers"
LOST_WAKEUP = f"{TRACKERS / 'lost_wakeup.py'}:LostWakeup"
SMALL = ControlledOptions(StrategySpec("random_walk"), executions=60, max_steps=400)


class _Fake:
    """Workers 0..n-1, all runnable; the state changes at step ``change`` (-1: never)."""

    def __init__(self, workers: int, change: int = -1) -> None:
        self.workers = workers
        self.change = change
        self.taken: list[int] = []

    def runnable(self) -> tuple[list[int], bool]:
        return list(range(self.workers)), False

    def take(self, worker: int) -> None:
        self.taken.append(worker)

    def settled(self, worker: int) -> bool:
        return False

    def state(self) -> Hashable:
        return 0 <= self.change < len(self.taken)


def test_the_probe_gives_every_worker_its_turns_and_stops_at_the_first_change() -> None:
    stuck = _Fake(3)
    result = probe(stuck, 100, lambda w: f"spin {w}")
    assert result.end is ProbeEnd.STALLED and result.since == 100
    assert stuck.taken == [0, 1, 2] * PROBE_ROUNDS  # fair: round robin, every round

    live = _Fake(3, change=4)
    assert probe(live, 100, lambda w: "x").end is ProbeEnd.PROGRESS
    assert len(live.taken) == 5  # a live execution pays for the probe only until it moves


def test_the_story_of_a_stall_begins_where_the_spinner_went_into_its_wait() -> None:
    steps = [Step(0, "check"), Step(1, "add"), Step(1, "look"), Step(0, "sleep"),
             *[Step(0, "wait")] * 10]
    stalled = ProbeResult(ProbeEnd.STALLED, len(steps), ((0, "wait"),) * PROBE_ROUNDS)
    assert stall_start(stalled, steps) == 0  # the spinner's check: the race starts there


def test_a_lost_wake_up_is_a_no_progress_failure_whose_bundle_replays() -> None:
    result = run_controlled(RunConfig(tracker=LOST_WAKEUP, variant="racy", seed=0), SMALL)

    assert result.run.exit_reason is ExitReason.NO_PROGRESS and result.exit_code == 1
    assert result.ends.get("no-progress") == 1
    found = result.run.principal_violation
    assert found is not None and found.invariant == "no-progress"
    assert "consumer #1 spins at 'wait for wake-up'" in found.message
    assert found.message.endswith("producer #1 has finished its role")  # who waits for what
    snippet = render_snippet(result.run)
    assert "the line above" in snippet and "more times" in snippet  # a spin, folded
    assert len(snippet.splitlines()) < 12

    bundle = from_controlled(result)
    assert bundle is not None
    report = replay_bundle(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail
    assert report.result.exit_reason is ExitReason.NO_PROGRESS
    again = report.outcome.principal_violation
    assert again is not None
    assert (again.invariant, again.fields, again.message) == (
        found.invariant, found.fields, found.message)  # the same verdict, the same words


def test_the_same_handshake_under_one_lock_finishes() -> None:
    result = run_controlled(RunConfig(tracker=LOST_WAKEUP, variant="locked", seed=0), SMALL)
    assert result.failing is None and result.exit_code == 0
    assert result.ends == {"finished": SMALL.executions}


def test_check_tells_a_wait_nobody_ends_from_a_role_that_waits_without_yielding(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", "--tracker", LOST_WAKEUP, "--steps", "50"])
    out = capsys.readouterr().out

    assert code == 0  # the tracker's form is fine: the hang is the racy variant's bug
    racy = next(line for line in out.splitlines() if line.strip().startswith("racy"))
    assert "cannot finish" in racy and "not a role that waits without yielding" in racy
    assert "consumer #1 spins at 'wait for wake-up'" in racy
    locked = next(line for line in out.splitlines() if line.strip().startswith("locked"))
    assert locked.rstrip().endswith("PCT executions finished")
