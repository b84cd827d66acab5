"""Stress checks every tracker's tests share: racy variants caught every time, fixed ones silent.

A stress test that a racy tracker passes is broken, so "caught" means every
trial of a batch, each within a budget; "silent" means a long keep-going
run that counts violations instead of stopping at the first. In controlled
mode, "caught" means PCT finds the bug, its bundle replays, and the
explanation names the steps that race; "silent" means every PCT execution
finishes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.core.config import RunConfig
from shmstress.core.exit_reason import ExitReason
from shmstress.core.result import RunResult
from shmstress.free.runner import run
from shmstress.repro.bundle import load_bundle
from shmstress.testing.explore import InterleavingFailure, check_interleavings

TRIALS = 5
BUDGET_S = 15.0
CLEAN_POINTS = 150_000 if os.environ.get("CI") else 100_000
CONTROLLED_EXECUTIONS = 300


def assert_caught_every_trial(
    tracker: str, variant: str, invariants: Iterable[str], seed: int = 100
) -> list[RunResult]:
    """Each of TRIALS real-process runs stops at a violation of one of ``invariants``."""
    expected = set(invariants)
    results = []
    for trial in range(TRIALS):
        result = run(RunConfig(tracker=tracker, variant=variant, duration=BUDGET_S,
                               seed=seed + trial))
        assert result.exit_reason is ExitReason.VIOLATION, (
            f"{tracker}/{variant} trial {trial} (seed {seed + trial}) missed the bug"
        )
        first = result.principal_violation
        assert first is not None and first.invariant in expected, first
        assert first.worker is not None and first.worker.pid > 0
        assert "\n" not in first.message
        results.append(result)
    return results


def assert_silent_over_long_run(tracker: str, variant: str, seed: int = 5) -> RunResult:
    """A keep-going run of at least CLEAN_POINTS points finds nothing, online or at rest."""
    result = run(RunConfig(tracker=tracker, variant=variant, duration=120,
                           max_points=CLEAN_POINTS, seed=seed, stop_on_first=False))
    assert result.exit_reason is ExitReason.POINTS_REACHED, result.exit_reason
    assert result.points >= CLEAN_POINTS
    assert result.violation_count == 0, [v.message for v in result.violations]
    assert not result.drain_timed_out
    return result


def assert_caught_at_rest_every_trial(
    tracker: str, variant: str, invariant: str, points: int = 40_000, seed: int = 200
) -> None:
    """For bugs only visible once the run settled: each trial ends with an at-rest violation.

    A trial is ``points`` points, not seconds: on a loaded machine a second holds fewer
    points and with them fewer chances, so a budget in seconds tests the load."""
    for trial in range(TRIALS):
        result = run(RunConfig(tracker=tracker, variant=variant, duration=BUDGET_S,
                               max_points=points, seed=seed + trial, stop_on_first=False))
        assert result.exit_code == 1, f"{tracker}/{variant} trial {trial} found nothing"
        assert any(v.invariant == invariant and v.at_rest for v in result.violations), [
            v.message for v in result.violations
        ]


def assert_controlled_failure_replays(
    tracker: str,
    variant: str,
    racing_steps: Mapping[str, Sequence[str]],
    out: Path,
    capsys: pytest.CaptureFixture[str],
    executions: int = CONTROLLED_EXECUTIONS,
    params: Mapping[str, int] | None = None,
) -> str:
    """Controlled mode's default strategy (PCT) finds the bug; its bundle replays with
    ``shmstress replay`` (exit 1, "reproduced"); the explanation reads in the seed's form and
    names the racing steps of the invariant that broke (``racing_steps``), in order.

    Returns the replay's explanation.
    """
    with pytest.raises(InterleavingFailure) as failure:
        check_interleavings(tracker, variant, strategy="pct", executions=executions,
                            params=params, out=out)
    assert "explanation:" in str(failure.value)
    (bundle,) = out.glob("*.json")
    invariant = load_bundle(bundle).violation.invariant
    assert invariant in racing_steps, invariant
    capsys.readouterr()
    assert main(["replay", str(bundle)]) == 1
    printed = capsys.readouterr().out
    assert f"reproduced: {invariant}: " in printed
    explanation = printed[printed.index("Initial state: "):]
    assert not explanation.startswith("Initial state: unknown")
    lines = [line.strip() for line in explanation.splitlines()]
    assert any(line.startswith("- ") for line in lines)
    assert any(line.startswith("=> ") for line in lines)
    at = 0
    for step in racing_steps[invariant]:  # in this order, each after the one before
        at = explanation.find(step, at)
        assert at >= 0, f"{step!r} missing in order from:\n{explanation}"
        at += len(step)
    return explanation


def assert_clean_under_pct(tracker: str, variant: str, executions: int = 200) -> None:
    """Every PCT execution of a correct variant finishes: no violation, no step bound."""
    result = check_interleavings(tracker, variant, strategy="pct", executions=executions)
    assert result.ends == {"finished": executions}, result.ends
