"""A race that crashes a worker is a failure with a bundle that replays, in both modes.

``tests/trackers/racy_crash.py``: two takers check a shared stack, then pop in a second
step; under a race the second pop finds it empty and raises. No invariant breaks: the
exception is the failure. Its locked twin never raises.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import PctSpec, RandomWalkSpec
from shmstress.core.config import RunConfig
from shmstress.core.crash import CRASH
from shmstress.core.exit_reason import ExitReason
from shmstress.free.runner import run
from shmstress.repro.bundle import from_controlled, from_free_run
from shmstress.repro.replay import Verdict, replay_bundle

pytestmark = pytest.mark.stress

TRACKER = f"{Path(__file__).parent / 'trackers' / 'racy_crash.py'}:RacyCrash"
POP_LINE = next(number for number, line in enumerate(
    (Path(__file__).parent / "trackers" / "racy_crash.py").read_text().splitlines(), 1)
    if 'raise IndexError("pop from an empty stack")' in line)


def _assert_the_pop_crashed(message: str, fields: dict[str, int]) -> None:
    assert "raised IndexError: pop from an empty stack at racy_crash.py:" in message
    assert fields["line"] == POP_LINE


def test_controlled_mode_finds_the_crash_and_its_bundle_replays() -> None:
    result = run_controlled(RunConfig(tracker=TRACKER, variant="racy", seed=1),
                            ControlledOptions(PctSpec(), executions=1000))
    assert result.run.exit_reason is ExitReason.VIOLATION and result.exit_code == 1
    found = result.run.principal_violation
    assert found is not None and found.invariant == CRASH
    _assert_the_pop_crashed(found.message, dict(found.fields))
    assert result.failing is not None and result.failing.reproduced
    bundle = from_controlled(result)
    assert bundle is not None
    for _ in range(3):
        report = replay_bundle(bundle, record=False)
        assert report.verdict is Verdict.REPRODUCED, report.detail


def test_free_mode_finds_the_crash_and_its_bundle_replays() -> None:
    result = run(RunConfig(tracker=TRACKER, variant="racy", seed=2, duration=20))
    assert result.exit_reason is ExitReason.VIOLATION and result.exit_code == 1
    found = result.principal_violation
    assert found is not None and found.invariant == CRASH and found.elapsed_s is not None
    _assert_the_pop_crashed(found.message, dict(found.fields))
    assert any("IndexError: pop from an empty stack" in crash for crash in result.crashes)
    bundle = from_free_run(result)
    assert bundle is not None
    report = replay_bundle(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail
    assert any("IndexError" in crash for crash in report.result.crashes)


def test_the_explanation_shows_the_other_taker_between_check_and_pop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--tracker", TRACKER, "--mode", "controlled", "--seed", "1",
                 "--quiet", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    explanation = out.split("  explanation:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    match = re.search(r"(taker #\d+) \(pid \d+\) raised IndexError", out)
    assert match is not None, out
    taker = match.group(1)
    steps = [line.strip() for line in explanation if line.strip().startswith("- ")]
    # the crashing taker checks, another taker pops the last item, then the crash's pop
    assert steps[0].startswith(f"- {taker}") and steps[0].endswith("Check"), steps
    assert steps[-1].startswith(f"- {taker}") and steps[-1].endswith("Pop"), steps
    assert any("Pop" in step and not step.startswith(f"- {taker}") for step in steps[1:-1])
    assert main(["replay", str(next(tmp_path.glob("*.json")))]) == 1


@pytest.mark.parametrize("mode", ["controlled", "free"])
def test_the_locked_twin_never_crashes(mode: str) -> None:
    config = RunConfig(tracker=TRACKER, variant="locked", seed=3, duration=1.0)
    if mode == "controlled":
        result = run_controlled(config, ControlledOptions(RandomWalkSpec(),
                                                          executions=300)).run
        assert result.exit_reason is ExitReason.EXECUTIONS_DONE
    else:
        result = run(config)
        assert result.exit_reason is ExitReason.DURATION_REACHED
    assert result.violation_count == 0 and not result.crashes
