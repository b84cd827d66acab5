"""Replay: free-run failures and controlled failures reproduce; edited schedules diverge."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.bundle import Bundle, from_free_run, load_bundle, write_bundle
from harness.cli import main
from harness.config import RunConfig
from harness.controlled.cli import bundle_of_controlled
from harness.controlled.options import ControlledOptions
from harness.controlled.runner import run_controlled
from harness.recording import Step
from harness.replay import Verdict, replay_bundle
from harness.runner import run
from harness.strategies import StrategySpec
from tracker.dra.variants import RACY

pytestmark = pytest.mark.stress

TRACKERS = Path(__file__).parent / "trackers"


def _free_bundle(variant: str, seed: int) -> Bundle:
    result = run(RunConfig(variant=variant, seed=seed, duration=20))
    assert result.violation_count, f"{variant} seed {seed}: no violation in free mode"
    bundle = from_free_run(result)
    assert bundle is not None and bundle.steps
    return bundle


def _controlled_bundle(variant: str, strategy: str = "pct", seed: int = 0) -> Bundle:
    result = run_controlled(RunConfig(variant=variant, seed=seed),
                            ControlledOptions(StrategySpec(strategy, depth=3), executions=1000))
    bundle = bundle_of_controlled(result)
    assert bundle is not None, f"{strategy} found nothing in {variant}"
    return bundle


@pytest.mark.parametrize("variant", RACY)
def test_every_free_mode_failure_replays(variant: str) -> None:
    for seed in range(10):
        result = run(RunConfig(variant=variant, seed=seed, duration=20))
        bundle = from_free_run(result)
        assert bundle is not None, f"{variant} seed {seed}: no violation in free mode"
        report = replay_bundle(bundle)
        assert report.verdict is Verdict.REPRODUCED, (
            f"seed {seed}: {report.detail}; {len(bundle.steps)} of {result.points} points "
            f"on the tape, violations at {[v.seq for v in result.violations]}, "
            f"workers killed: {result.forced_pids}")
        assert bundle.violation.matches(report.result.violations[0])
        assert report.exit_code == 1


# PCT finds the revision race quickly; the unordered-events race needs the informer preempted
# between popping an event and delivering it, plus two more orderings at exact steps, which
# PCT's few change points rarely hit (bench: random walk finds it in tens of executions).
@pytest.mark.parametrize(("variant", "strategy"), [
    ("gather-unchecked", "pct"), ("original", "pct"), ("events-unordered", "random_walk")])
def test_a_controlled_failure_replays(variant: str, strategy: str) -> None:
    bundle = _controlled_bundle(variant, strategy)
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


def test_a_schedule_cut_short_is_not_reproduced() -> None:
    bundle = _controlled_bundle("gather-unchecked")
    cut = replace(bundle, steps=bundle.steps[: len(bundle.steps) // 2])
    report = replay_bundle(cut)
    assert report.verdict is Verdict.NOT_REPRODUCED and report.exit_code == 3
    assert "did not occur" in report.detail


def test_a_deadlock_replays() -> None:
    result = run_controlled(
        RunConfig(tracker=f"{TRACKERS / 'lock_order.py'}:LockOrder", variant="inverted", seed=1),
        ControlledOptions(StrategySpec("random_walk"), executions=200))
    bundle = bundle_of_controlled(result)
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
    assert (out / "run.log").is_file()
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
    assert f"diverged at step {at}: expected" in out
    assert "reproduced:" not in out


def test_a_clean_run_writes_no_bundle(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", "--variant", "fixed", "--duration", "0.3", "--seed", "1", "--quiet",
                 "--out", str(out)]) == 0
    assert not out.exists() or not list(out.glob("*.json"))


def test_steps_are_compared_by_label() -> None:
    assert Step(1, "a") != Step(1, "b")
