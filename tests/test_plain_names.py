"""Replay does not depend on the names the OS knows objects by: a segment called after a
pid, or one under a random ``psm_*`` name, is known to the schedule by where the run made
it, so a bundle found in one session replays in another."""

from __future__ import annotations

from pathlib import Path

import pytest

from shmstress.controlled.strategies import PortfolioSpec
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from shmstress.repro.plain_bundle import from_outcome
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict
from tests.plain_twins import assert_free_not_rarer

LIB = Path(__file__).resolve().parent / "scenarios" / "lib_names.py"


def _spec(function: str) -> PlainSpec:
    return PlainSpec(ScenarioRef.parse(f"{LIB}:{function}"), trace=(str(LIB),))


@pytest.mark.parametrize("function", ["pid_named_racy", "random_named_racy"])
def test_a_bug_in_code_whose_segment_names_vary_replays(function: str) -> None:
    spec = _spec(function)
    strategy = PortfolioSpec()
    result = explore(spec, Exploration(strategy, 3, 100))
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    labels = " ".join(step.label for step in failing.steps)
    assert "ctab-" not in labels and "psm_" not in labels, labels
    bundle = from_outcome(f"lib_names.py:{function}", spec, result.strategy,
                          3, result.failing_index, failing)
    report = replay_plain(bundle)  # a new session: new pids, new random names
    assert report.verdict is Verdict.REPRODUCED, report.detail


def test_free_mode_finds_the_pid_named_race_at_least_as_often_as_a_plain_loop() -> None:
    """Both rarely (measured 6 in 100 free executions, 0 in 100 plain runs, on a loaded
    machine): rounds of 100, so free mode has its failures counted before it is compared."""
    assert_free_not_rarer(LIB, "pid_named_racy", 100, trace=(str(LIB),))


def test_the_locked_twin_stays_clean() -> None:
    result = explore(_spec("pid_named_locked"), Exploration(PortfolioSpec(), 3, 200))
    assert result.failing is None, result.failing and result.failing.failure
