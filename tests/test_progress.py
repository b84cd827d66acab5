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
    MAX_ROUNDS,
    PROBE_ROUNDS,
    ProbeEnd,
    ProbeResult,
    probe,
    repeats,
    stall_start,
)
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import PctSpec, RandomWalkSpec
from shmstress.core.config import RunConfig
from shmstress.core.exit_reason import ExitReason
from shmstress.core.trace import Step
from shmstress.free.runner import run
from shmstress.plain.outcome import PlainEnd
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from shmstress.render.plain_report import outcome_lines
from shmstress.repro.bundle import from_controlled, from_free_run
from shmstress.repro.plain_bundle import from_json, from_outcome, to_json
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict, replay_bundle
from tests.helpers import render_snippet

TRACKERS = Path(__file__).parent / "trackers"
SLEEPER = Path(__file__).resolve().parents[1] / "examples" / "plain" / "sleeper.py"
LOST_WAKEUP = f"{TRACKERS / 'lost_wakeup.py'}:LostWakeup"
SMALL = ControlledOptions(RandomWalkSpec(), executions=60, max_steps=400)


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


def test_a_long_read_only_operation_is_not_a_spin() -> None:
    """A worker whose turns do not repeat (a scan of many points) is on its way: the probe
    gives it up to MAX_ROUNDS turns and does not call it stuck."""
    scanning = _Fake(2)
    result = probe(scanning, 0, lambda w: f"scan {len(scanning.taken)}")
    assert result.end is ProbeEnd.PROGRESS
    assert len(scanning.taken) == 2 * MAX_ROUNDS
    assert repeats(["a", "b", "c", "b", "c"]) and repeats(["x", "y", "y"])
    assert not repeats(["a", "b", "c", "d"]) and not repeats(["a"])


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


def _plain(function: str) -> PlainSpec:
    return PlainSpec(ScenarioRef.parse(f"{SLEEPER}:{function}"), max_steps=300)


def test_plain_processes_that_spin_for_a_lost_wake_up_are_no_progress_and_replay() -> None:
    spec = _plain("lost_wakeup")
    exploration = Exploration(PctSpec(), 1, 40)
    result = explore(spec, exploration)

    failing = result.failing
    assert failing is not None and failing.end is PlainEnd.NO_PROGRESS, result.ends
    assert failing.failure is not None
    message = failing.failure.message
    assert message.startswith("no progress: consumer #1 spins at ")
    assert "'sleep'" in message and "producer #1 has finished" in message
    assert "main waits to join consumer #1" in message
    text = "\n".join(outcome_lines(failing))
    assert "producer #1" in text.split("what went wrong")[0]  # how it got stuck, not the spin
    assert len(text.splitlines()) < 30

    bundle = from_json(to_json(from_outcome("sleeper.py:lost_wakeup", spec, exploration.strategy,
                                            1, result.failing_index, failing)))
    report = replay_plain(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail
    assert report.outcome.failure is not None and report.outcome.failure.message == message


def test_plain_processes_that_take_turns_under_a_lock_finish() -> None:
    result = explore(_plain("locked"), Exploration(PctSpec(), 1, 15))
    assert result.failing is None and result.ends == {"finished": 15}


def test_a_free_run_whose_worker_never_finishes_fails_with_a_bundle_that_replays() -> None:
    """The consumer spins (reaching points) for a wake-up nobody sends: at the stop it does not
    finish. The run fails with its stack, and the replay of what was recorded probes at the
    tape's end and finds the same worker stuck."""
    result = run(RunConfig(tracker=LOST_WAKEUP, variant="forgets", seed=1, duration=0.2,
                           stop_timeout=0.5))

    assert result.exit_reason is ExitReason.NO_PROGRESS and result.exit_code == 1
    found = result.principal_violation
    assert found is not None and found.invariant == "no-progress"
    assert found.message.startswith("no progress: consumer #1")
    assert "producer #1" in found.message and "has finished its role" in found.message
    (stack,) = result.crashes  # the stuck worker's own stack, for the report
    assert stack.startswith("consumer #1") and "lost_wakeup.py" in stack

    bundle = from_free_run(result)
    assert bundle is not None and bundle.violation.invariant == "no-progress"
    report = replay_bundle(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail
    assert "consumer #1 spins at 'wait for wake-up'" in report.detail


def test_a_free_run_whose_roles_all_finish_checks_at_rest_at_once() -> None:
    """Roles that end on their own end the run there, not after the whole duration, and the
    checks at rest run then: a consumer that waits for a wake-up nobody sends and gives up
    leaves its items behind (in every run); one under the lock takes them all."""
    left = run(RunConfig(tracker=LOST_WAKEUP, variant="forgets", seed=0, duration=600.0,
                         params={"patience": 3}))
    assert left.exit_reason is ExitReason.ROLES_FINISHED and left.exit_code == 1
    assert left.elapsed_s < 300.0  # it did not wait out the duration
    found = left.principal_violation
    assert found is not None and found.invariant == "all-consumed"
    assert found.message.startswith("2 item(s) produced and never consumed")

    clean = run(RunConfig(tracker=LOST_WAKEUP, variant="locked", seed=0, duration=600.0))
    assert clean.exit_reason is ExitReason.ROLES_FINISHED and clean.exit_code == 0
    assert clean.elapsed_s < 300.0 and not clean.violations


def test_a_free_worker_stuck_inside_its_step_is_a_failure_with_a_bundle() -> None:
    """The watchdog, during the run: a worker stops reaching points inside a step (a sleep
    loop: code shmstress does not control). Exit 1, not 4: the code hung, not the harness;
    its replay hangs in the same step of the same worker."""
    config = RunConfig(tracker=f"{TRACKERS / 'lock_order.py'}:LockOrder", variant="ordered",
                       seed=0, duration=5.0, hang_timeout=0.5, stop_timeout=0.5,
                       params={"rounds": 50, "hang-after": 10, "first-hangs-only": 1})
    result = run(config)

    assert result.exit_reason is ExitReason.NO_PROGRESS and result.exit_code == 1
    assert result.elapsed_s < config.duration  # found while it ran, not at the stop
    found = result.principal_violation
    assert found is not None and "reached no new point for 0.5 s" in found.message
    assert result.crashes and all("its stack:" in c and "lock_order.py" in c
                                  for c in result.crashes)
    bundle = from_free_run(result)
    assert bundle is not None and bundle.violation.invariant == "no-progress"
    assert len(bundle.steps) == result.points  # what the workers recorded up to the hang
    report = replay_bundle(bundle, stop_timeout=1.0)  # the same worker hangs in the same step
    assert report.verdict is Verdict.REPRODUCED, report.detail
    assert "forward #1 did not reach its next point within 1 s" in report.detail
