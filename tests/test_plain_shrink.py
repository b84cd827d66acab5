"""``shmstress shrink`` of a plain bundle: the same failure, never a bigger schedule, and
the result replays."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from shmstress.cli.main import main
from shmstress.controlled.strategies import PctSpec, PortfolioSpec
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from shmstress.repro.plain_bundle import (
    PlainBundle,
    from_outcome,
    peek_plain,
    write_plain_bundle,
)
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.plain_shrink import shrink_plain
from shmstress.repro.replay import Verdict
from shmstress.repro.shrink import ShrinkOptions

pytestmark = pytest.mark.stress

COUNTER = Path(__file__).resolve().parent.parent / "examples" / "plain" / "counter.py"


def _failing_bundle(depth: int, seed: int) -> PlainBundle:
    """The counter's lost update, found by PCT at ``depth``: deeper finds come with more
    preemptions than the race needs, which is what shrinking takes away."""
    named = f"{COUNTER}:racy"
    spec = PlainSpec(ScenarioRef.parse(named))
    strategy = PctSpec(depth=depth)
    result = explore(spec, Exploration(strategy, seed, 200))
    assert result.failing is not None and result.failing.failed
    return from_outcome(named, spec, strategy, seed, result.failing_index, result.failing)


def test_shrinking_keeps_the_failure_never_grows_and_replays() -> None:
    bundles = [_failing_bundle(depth, seed) for depth in (3, 5) for seed in (1, 2)]
    shrunk_any = False
    for bundle in bundles:
        report = shrink_plain(bundle, ShrinkOptions(max_executions=150))
        assert report is not None
        assert report.after.key() <= report.before.key()
        assert report.bundle.failure.message == bundle.failure.message
        assert replay_plain(report.bundle).verdict is Verdict.REPRODUCED
        shrunk_any |= report.after.key() < report.before.key()
        assert report.after.preemptions >= 1  # a lost update needs one
    assert shrunk_any, [b.preemptions for b in bundles]


def test_a_bundle_that_does_not_reproduce_is_not_shrunk(tmp_path: Path) -> None:
    bundle = _failing_bundle(3, 1)
    wrong = replace(bundle, failure=msgspec.structs.replace(bundle.failure,
                                                            message="AssertionError: other"))
    assert shrink_plain(wrong, ShrinkOptions(max_executions=5)) is None
    path = write_plain_bundle(wrong, tmp_path / "wrong.json")
    assert main(["shrink", str(path), "-o", str(tmp_path / "small.json")]) == 3
    assert not (tmp_path / "small.json").exists()


def test_the_shrink_command_writes_a_bundle_that_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_plain_bundle(_failing_bundle(5, 2), tmp_path / "found.json")
    target = tmp_path / "small.json"
    assert main(["shrink", str(source), "-o", str(target), "--max-executions", "100"]) == 0
    out = capsys.readouterr().out
    assert f"-> {target}" in out and "still fails with: AssertionError" in out
    assert f"shmstress replay {target}" in out
    assert main(["replay", str(target)]) == 1


def _default_bundle(seed: int) -> PlainBundle:
    """The README's counter failure, found as ``shmstress test`` finds it (the portfolio)."""
    named = f"{COUNTER}:racy"
    spec = PlainSpec(ScenarioRef.parse(named))
    strategy = PortfolioSpec()
    result = explore(spec, Exploration(strategy, seed, 200))
    assert result.failing is not None and result.failing.failed
    return from_outcome(named, spec, strategy, seed, result.failing_index, result.failing)


def test_the_default_shrink_says_each_stage_and_proves_the_preemption_count_minimal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One line per stage on stderr; a lost update needs a preemption, and every schedule
    without one is few enough to search whole, so the first stage says so rather than
    spending the budget (a shrink of this failure used to run its 3,000 executions)."""
    source = write_plain_bundle(_default_bundle(5), tmp_path / "found.json")
    target = tmp_path / "small.json"
    assert main(["shrink", str(source), "-o", str(target)]) == 0
    captured = capsys.readouterr()
    stages = [line for line in captured.err.splitlines() if line.startswith("shrink: ")]
    assert [line.split(":")[1].strip() for line in stages] == [
        "fewer preemptions", "fewer steps"], captured.err
    assert ("none fails with fewer" in stages[0]
            or "a failure within 1 preemption" in stages[0]), stages[0]
    assert "after" in captured.out and main(["replay", str(target)]) == 1
    shrunk = peek_plain(target)
    assert shrunk is not None and shrunk.preemptions >= 1


def test_a_spent_time_budget_ends_every_stage_and_keeps_a_bundle_that_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _failing_bundle(5, 2)
    report = shrink_plain(bundle, ShrinkOptions(max_seconds=1e-9, progress=print))
    assert report is not None and report.executions == 0
    assert report.after == report.before and report.bundle is bundle
    lines = capsys.readouterr().out.splitlines()
    assert all("the budget ran out" in line for line in lines) and len(lines) == 2, lines
    assert replay_plain(report.bundle).verdict is Verdict.REPRODUCED

