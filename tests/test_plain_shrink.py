"""``shmstress shrink`` of a plain bundle: the same failure, never a bigger schedule, and
the result replays."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from shmstress.cli.main import main
from shmstress.controlled.strategies.base import StrategySpec
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from shmstress.repro.plain_bundle import PlainBundle, from_outcome, write_plain_bundle
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.plain_shrink import shrink_plain
from shmstress.repro.replay import Verdict

pytestmark = pytest.mark.stress

COUNTER = Path(__file__).resolve().parent.parent / "examples" / "plain" / "counter.py"


def _failing_bundle(depth: int, seed: int) -> PlainBundle:
    """The counter's lost update, found by PCT at ``depth``: deeper finds come with more
    preemptions than the race needs, which is what shrinking takes away."""
    named = f"{COUNTER}:racy"
    spec = PlainSpec(ScenarioRef.parse(named))
    strategy = StrategySpec("pct", depth=depth)
    result = explore(spec, Exploration(strategy, seed, 200))
    assert result.failing is not None and result.failing.failed
    return from_outcome(named, spec, strategy, seed, result.failing_index, result.failing)


def test_shrinking_keeps_the_failure_never_grows_and_replays() -> None:
    bundles = [_failing_bundle(depth, seed) for depth in (3, 5) for seed in (1, 2)]
    shrunk_any = False
    for bundle in bundles:
        report = shrink_plain(bundle, max_executions=150)
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
    assert shrink_plain(wrong, max_executions=5) is None
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
