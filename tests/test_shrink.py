"""Shrinking: the seed race from a long free-run schedule down to a few preemptions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.core.config import RunConfig
from shmstress.free.runner import run
from shmstress.repro.bundle import Bundle, from_free_run, load_bundle, write_bundle
from shmstress.repro.replay import Verdict, replay_bundle
from shmstress.repro.shrink import ShrinkOptions, shrink_bundle
from tests.helpers import explain

pytestmark = pytest.mark.stress


def _free_bundle(seed: int) -> Bundle:
    result = run(RunConfig(tracker="dra", variant="gather-unchecked", seed=seed, duration=20))
    bundle = from_free_run(result)
    assert bundle is not None
    return bundle


def test_the_seed_race_shrinks_to_a_few_preemptions_and_still_replays() -> None:
    bundle = _free_bundle(seed=3)
    report = shrink_bundle(bundle, ShrinkOptions(max_executions=1500))
    assert report is not None
    assert report.before.preemptions > report.after.preemptions
    assert report.after.preemptions <= 4
    assert report.after.key() < report.before.key()
    assert report.bundle.violation.invariant == "gather-complete"
    assert report.bundle.preemptions == report.after.preemptions
    assert len(report.bundle.steps) == report.after.steps
    replayed = replay_bundle(report.bundle)
    assert replayed.verdict is Verdict.REPRODUCED, replayed.detail
    assert replayed.outcome.preemptions == report.after.preemptions
    explanation = explain(report.replay.result)
    assert explanation is not None and explanation.outcome


def test_shrinking_is_deterministic() -> None:
    bundle = _free_bundle(seed=5)
    options = ShrinkOptions(max_executions=300, search_executions=40)
    first, second = shrink_bundle(bundle, options), shrink_bundle(bundle, options)
    assert first is not None and second is not None
    assert first.after == second.after
    # the violation's words name worker pids, which differ from run to run
    assert replace(first.bundle, violation=second.bundle.violation) == second.bundle
    assert first.bundle.violation.fields == second.bundle.violation.fields


def test_a_bundle_that_does_not_reproduce_is_not_shrunk() -> None:
    bundle = _free_bundle(seed=3)
    assert shrink_bundle(replace(bundle, steps=bundle.steps[:10])) is None


def test_cli_shrink_writes_a_bundle_that_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_bundle(_free_bundle(seed=7), tmp_path / "big.json")
    target = tmp_path / "small.json"
    assert main(["shrink", str(source), "-o", str(target), "--max-executions", "600"]) == 0
    out = capsys.readouterr().out
    assert f"shmstress replay {target}" in out and "explanation:" in out
    assert load_bundle(target).preemptions is not None
    assert main(["replay", str(target)]) == 1
    assert "reproduced:" in capsys.readouterr().out
    cut = write_bundle(replace(load_bundle(source), steps=()), tmp_path / "cut.json")
    assert main(["shrink", str(cut), "-o", str(tmp_path / "x.json")]) == 3
    assert "does not reproduce" in capsys.readouterr().err
