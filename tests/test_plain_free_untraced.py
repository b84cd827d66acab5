"""Free mode is never less able than a plain loop: the step lock orders the steps, not the
code between them, so a race inside a library with no point inside still happens, and the
noise at the library's door makes it happen more often than in a plain run."""

from __future__ import annotations

from pathlib import Path

from shmstress.controlled.strategies import FreeRunSpec
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import FreeSpec, PlainSpec
from shmstress.render.plain_report import loose_lines
from shmstress.repro.plain_bundle import from_outcome
from shmstress.repro.plain_replay import replay_plain
from tests.plain_twins import assert_free_not_rarer

LIBRARY = Path(__file__).resolve().parent / "scenarios" / "lib_jsonstore.py"
RUNS = 120


def test_free_mode_finds_a_race_inside_untraced_code_at_least_as_often_as_a_plain_loop() -> None:
    assert_free_not_rarer(LIBRARY, "racy", RUNS)  # nothing traced


def test_a_free_failure_inside_untraced_code_says_what_its_replay_cannot_promise() -> None:
    spec = PlainSpec(ScenarioRef.parse(f"{LIBRARY}:racy"), free=FreeSpec())
    result = explore(spec, Exploration(FreeRunSpec(), 0, 300))
    assert result.failing is not None and result.failing.failed, result.ends
    bundle = from_outcome("lib_jsonstore.py:racy", spec, result.strategy, 0,
                          result.failing_index, result.failing)
    assert bundle.loose  # the steps after which the library ran beside the others
    report = replay_plain(bundle)
    assert loose_lines(report.bundle.loose)
