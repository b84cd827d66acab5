"""Stress checks every tracker's tests share: racy variants caught every time, fixed ones silent.

A stress test that a racy tracker passes is broken, so "caught" means every
trial of a batch, each within a budget; "silent" means a long keep-going
run that counts violations instead of stopping at the first.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from harness.config import RunConfig
from harness.exit_reason import ExitReason
from harness.result import RunResult
from harness.runner import run

TRIALS = 5
BUDGET_S = 15.0
CLEAN_POINTS = 150_000 if os.environ.get("CI") else 100_000


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
        first = result.first_violation
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
    tracker: str, variant: str, invariant: str, duration: float = 1.0, seed: int = 200
) -> None:
    """For bugs only visible once the run settled: each trial ends with an at-rest violation."""
    for trial in range(TRIALS):
        result = run(RunConfig(tracker=tracker, variant=variant, duration=duration,
                               seed=seed + trial, stop_on_first=False))
        assert result.exit_code == 1, f"{tracker}/{variant} trial {trial} found nothing"
        assert any(v.invariant == invariant and v.at_rest for v in result.violations), [
            v.message for v in result.violations
        ]
