"""Real processes against the DRA tracker: racy variants are caught, correct ones stay silent.

A stress test that the racy tracker passes is broken, so every racy variant
must be caught in every trial of the batch, within a budget.
"""

from __future__ import annotations

import os

import pytest

from shmstress.core.config import RunConfig
from shmstress.core.exit_reason import ExitReason
from shmstress.free.runner import run
from shmstress.trackers.dra.variants import CORRECT, RACY

pytestmark = pytest.mark.stress

TRIALS = 5
BUDGET_S = 15.0
CLEAN_POINTS = 150_000 if os.environ.get("CI") else 100_000


@pytest.mark.parametrize("variant", RACY)
def test_racy_variant_is_caught_in_every_trial(variant: str) -> None:
    for trial in range(TRIALS):
        result = run(RunConfig(tracker="dra", variant=variant, duration=BUDGET_S, seed=100 + trial))
        assert result.exit_reason is ExitReason.VIOLATION, f"trial {trial} missed the race"
        assert result.exit_code == 1
        first = result.principal_violation
        assert first is not None and first.elapsed_s is not None
        assert first.invariant in ("gather-complete", "no-double-allocation")
        assert first.worker is not None and first.worker.pid > 0


@pytest.mark.parametrize("variant", RACY)
def test_racy_variant_double_allocates_when_only_the_symptom_is_checked(variant: str) -> None:
    result = run(
        RunConfig(tracker="dra", variant=variant, duration=BUDGET_S * 2, seed=7,
                  checks=("no-double-allocation",))
    )
    assert result.exit_reason is ExitReason.VIOLATION
    assert result.violations[0].invariant == "no-double-allocation"
    assert "was allocated to claims" in result.violations[0].message


@pytest.mark.parametrize("variant", CORRECT)
def test_correct_variant_is_silent_over_a_long_run(variant: str) -> None:
    result = run(
        RunConfig(tracker="dra", variant=variant, duration=120, max_points=CLEAN_POINTS, seed=5,
                  stop_on_first=False)
    )
    assert result.exit_reason is ExitReason.POINTS_REACHED
    assert result.points >= CLEAN_POINTS
    assert result.violation_count == 0, [v.message for v in result.violations]
    assert not result.drain_timed_out


def test_keep_going_counts_violations_and_checks_at_rest() -> None:
    result = run(RunConfig(tracker="dra", variant="original", duration=1.0, seed=9,
                           stop_on_first=False))
    assert result.exit_reason is ExitReason.DURATION_REACHED
    assert result.violation_count > 1
    assert result.exit_code == 1
