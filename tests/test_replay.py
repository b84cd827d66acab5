"""Replay: free-run failures and controlled failures reproduce; edited schedules diverge."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import PctSpec, RandomWalkSpec, spec_named
from shmstress.core.config import RunConfig
from shmstress.core.trace import step_number
from shmstress.free.runner import run
from shmstress.repro.bundle import Bundle, from_controlled, from_free_run, load_bundle, write_bundle
from shmstress.repro.replay import Verdict, replay_bundle
from shmstress.trackers.dra.variants import RACY

pytestmark = pytest.mark.stress

TRACKERS = Path(__file__).parent / "trackers"


# PCT's default spin rule (demote) finds the revision race in a few dozen executions but
# never events-unordered, which needs spinners that step aside (strategies/pct.py; `shmstress
# bench --section controlled` shows the spread).
SPIN = {"gather-unchecked": "demote", "original": "demote", "events-unordered": "aside"}


def _controlled_bundle(variant: str, strategy: str = "pct", seed: int = 0) -> Bundle:
    spec = (PctSpec(depth=3, spin=SPIN.get(variant, "demote")) if strategy == "pct"
            else spec_named(strategy))
    result = run_controlled(RunConfig(tracker="dra", variant=variant, seed=seed),
                            ControlledOptions(spec, executions=2000))
    bundle = from_controlled(result)
    assert bundle is not None, f"{strategy} found nothing in {variant}"
    return bundle


@pytest.mark.parametrize("variant", RACY)
def test_every_free_mode_failure_replays(variant: str) -> None:
    for seed in range(10):
        result = run(RunConfig(tracker="dra", variant=variant, seed=seed, duration=20))
        bundle = from_free_run(result)
        assert bundle is not None, f"{variant} seed {seed}: no violation in free mode"
        report = replay_bundle(bundle)
        assert report.verdict is Verdict.REPRODUCED, (
            f"seed {seed}: {report.detail}; {len(bundle.steps)} of {result.points} points "
            f"on the tape, violations at {[v.seq for v in result.violations]}, "
            f"workers killed: {result.forced_pids}")
        assert bundle.violation.matches(report.result.violations[0])
        assert report.exit_code == 1


@pytest.mark.parametrize("variant", RACY)
def test_a_pct_failure_replays(variant: str) -> None:
    bundle = _controlled_bundle(variant)
    assert bundle.strategy == PctSpec(depth=3, spin=SPIN[variant])
    report = replay_bundle(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail
    assert report.outcome.steps == bundle.steps
    assert report.result.recording is not None
    assert [(s.worker, s.label) for s in report.result.recording.steps] == [
        (s.worker, s.label) for s in bundle.steps]


def _swap_two_steps_of_one_worker(bundle: Bundle) -> tuple[Bundle, int]:
    steps = list(bundle.steps)
    for first, step in enumerate(steps):
        for second in range(first + 1, len(steps)):
            if steps[second].worker == step.worker and steps[second].label != step.label:
                steps[first], steps[second] = steps[second], steps[first]
                return replace(bundle, steps=tuple(steps)), first
    raise AssertionError("no two steps to swap")


def test_a_bundle_with_two_steps_swapped_diverges_at_the_first(tmp_path: Path) -> None:
    bundle = _controlled_bundle("gather-unchecked")
    edited, at = _swap_two_steps_of_one_worker(bundle)
    report = replay_bundle(edited)
    assert report.verdict is Verdict.DIVERGED
    assert report.exit_code == 3
    assert report.outcome.divergence is not None
    assert report.outcome.divergence.step == at
    assert report.outcome.divergence.expected == edited.steps[at]
    assert repr(bundle.steps[at].label) in report.outcome.divergence.actual
    role, index = [(role, i) for role, n in bundle.counts.items() for i in range(n)][
        edited.steps[at].worker]
    assert f"by {role} #{index + 1}, but {role} #{index + 1} is at" in report.detail


def test_a_schedule_cut_short_is_not_reproduced() -> None:
    bundle = _controlled_bundle("gather-unchecked")
    cut = replace(bundle, steps=bundle.steps[: len(bundle.steps) // 2])
    report = replay_bundle(cut)
    assert report.verdict is Verdict.NOT_REPRODUCED and report.exit_code == 3
    assert "did not occur" in report.detail


def test_a_deadlock_replays() -> None:
    result = run_controlled(
        RunConfig(tracker=f"{TRACKERS / 'lock_order.py'}:LockOrder", variant="inverted", seed=1),
        ControlledOptions(RandomWalkSpec(), executions=200))
    bundle = from_controlled(result)
    assert bundle is not None and bundle.violation.invariant == "deadlock"
    report = replay_bundle(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail


def test_cli_controlled_run_prints_the_replay_command_and_the_replay_reproduces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = main(["run", "--mode", "controlled", "--strategy", "pct", "--depth", "3",
                 "--executions", "500", "--variant", "gather-unchecked", "--seed", "3",
                 "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 1
    assert "strategy pct (depth 3)" in text and "gather-complete" in text
    (bundle_path,) = out.glob("*.json")
    assert f"shmstress replay {bundle_path}" in text
    assert bundle_path.with_suffix(".log").is_file()  # its own log, beside it
    assert main(["replay", str(bundle_path)]) == 1
    replayed = capsys.readouterr().out
    assert "reproduced: gather-complete" in replayed


def test_cli_free_run_writes_a_bundle_that_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["run", "--variant", "original", "--seed", "4", "--quiet",
                 "--out", str(out)]) == 1
    text = capsys.readouterr().out
    (bundle_path,) = out.glob("*.json")
    assert f"shmstress replay {bundle_path}" in text
    assert load_bundle(bundle_path).mode == "free"
    assert main(["replay", str(bundle_path)]) == 1
    assert "reproduced:" in capsys.readouterr().out


def test_cli_replay_of_a_swapped_bundle_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited, at = _swap_two_steps_of_one_worker(_controlled_bundle("original"))
    path = write_bundle(edited, tmp_path / "swapped.json")
    assert main(["replay", str(path)]) == 3
    out = capsys.readouterr().out
    assert f"diverged at step {step_number(at)}: expected" in out
    assert "reproduced:" not in out


def test_a_clean_run_writes_no_bundle(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", "--variant", "fixed", "--duration", "0.3", "--seed", "1", "--quiet",
                 "--out", str(out)]) == 0
    assert not out.exists() or not list(out.glob("*.json"))


def test_another_violation_of_the_same_invariant_names_the_fields_that_differ() -> None:
    bundle = _controlled_bundle("gather-unchecked")
    recorded = dict(bundle.violation.fields)
    name = next(iter(recorded))
    edited = replace(bundle, violation=replace(bundle.violation,
                                               fields=recorded | {name: recorded[name] + 1}))
    report = replay_bundle(edited, record=False)
    assert report.verdict is Verdict.DIFFERENT_VIOLATION and report.exit_code == 3
    assert (f"{name} {recorded[name]} (recorded {recorded[name] + 1})" in report.detail
            ), report.detail
    assert "invariant" not in report.detail.split(";")[0]  # the invariant itself is the same


def test_a_bundle_without_its_log_gives_the_log_of_its_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bundle replays exactly, so `shmstress log` can make its log again, and `replay
    --log` writes the same text."""
    path = write_bundle(_controlled_bundle("gather-unchecked"), tmp_path / "b")
    assert not path.with_suffix(".log").exists() and not list(path.parent.glob("*.log"))
    assert main(["log", str(path)]) == 0
    captured = capsys.readouterr()
    assert "replaying the bundle for its log" in captured.err
    logged = captured.out
    assert "Starting GatherAllocatedState" in logged
    assert main(["replay", str(path), "--log", str(tmp_path / "replay.log")]) == 1

    def same_run(log: str) -> list[str]:  # two replays differ only in times and pids
        return [re.sub(r"^(\S+: [IWE])\d{4} \S+ +\d+\]", r"\1]", line)
                for line in log.splitlines()]

    assert same_run((tmp_path / "replay.log").read_text()) == same_run(logged)


def test_every_free_failure_of_the_counter_example_replays_exactly() -> None:
    """The example's racy clerk reads the counter at one point and writes it at the next:
    a free worker overtaken between taking its sequence number and reading used to record
    a read before another's write that really came after it (7 of 20 such bundles
    replayed to a different violation). A free worker now holds the run's step lock from
    each point to its next, so the recorded order is the real one."""
    tracker = str(Path(__file__).resolve().parents[1] / "examples" / "counter_tracker.py")
    for seed in range(1, 21):
        result = run(RunConfig(tracker=f"{tracker}:TicketTracker", seed=seed, duration=5))
        bundle = from_free_run(result)
        assert bundle is not None, f"seed {seed}: no violation in free mode"
        report = replay_bundle(bundle, record=False)
        assert report.verdict is Verdict.REPRODUCED, f"seed {seed}: {report.detail}"
        assert bundle.violation.matches(report.result.violations[0])


def test_a_replay_that_ends_with_its_schedule_still_checks_at_rest() -> None:
    """A bundle of a failure found at rest whose schedule stops before every worker has
    finished (here: cut while they still run) is checked at rest where it ends."""
    tracker = str(Path(__file__).resolve().parents[1] / "examples" / "counter_tracker.py")
    result = run(RunConfig(tracker=f"{tracker}:TicketTracker", seed=2, duration=0.3,
                           checks=("no-lost-update",)))
    bundle = from_free_run(result)
    assert bundle is not None and bundle.violation.at_rest
    cut = replace(bundle, steps=bundle.steps[: bundle.phase_changes[0] - 10])  # still running
    report = replay_bundle(cut, record=False)
    assert report.outcome.end.value == "violation", report.detail
    (found,) = report.outcome.violations
    assert found.invariant == "no-lost-update" and found.at_rest


def test_a_free_failure_of_a_consumer_that_waits_for_ever_explains_replays_and_shrinks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The consumer of ``stuck_queue`` looks at the queue before each point, to choose
    between "get" and "wait for an item". Its free bundle diverged on replay at its first
    "get" (6 of 6 runs): the producer had put its items before the consumer started, and
    in a replay every worker runs to its first point before the first step; and after an
    idle step a free worker read the queue with the step lock let go. Now no free worker
    takes its first point before all are at theirs, and an idle worker lets go only at its
    next point."""
    code = str(TRACKERS / "stuck_queue.py")
    out = tmp_path / "out"
    assert main(["run", "--tracker", f"{code}:StuckQueue", "--variant", "short", "--seed", "1",
                 "--duration", "1", "--stop-timeout", "2", "--out", str(out)]) == 1
    text = capsys.readouterr().out
    assert "no-progress" in text and "explanation:" in text and "consumer #1" in text
    (bundle_path,) = out.glob("*.json")
    assert load_bundle(bundle_path).mode == "free"
    assert main(["replay", str(bundle_path), "--code", code]) == 1
    assert "reproduced: no-progress" in capsys.readouterr().out
    shrunk = tmp_path / "shrunk.json"
    assert main(["shrink", str(bundle_path), "--code", code, "-o", str(shrunk),
                 "--max-seconds", "20"]) == 0
    assert "still fails with: no-progress" in capsys.readouterr().out
    assert len(load_bundle(shrunk).steps) < len(load_bundle(bundle_path).steps)
