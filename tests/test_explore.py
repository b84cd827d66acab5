"""The pytest helper: a racy tracker fails with the story and the replay command."""

from __future__ import annotations

from pathlib import Path

import pytest

from shmstress.repro.bundle import load_bundle
from shmstress.testing.explore import InterleavingFailure, check_interleavings, explore

pytestmark = pytest.mark.stress


def test_a_racy_variant_fails_with_explanation_and_replay_command(tmp_path: Path) -> None:
    with pytest.raises(InterleavingFailure) as failure:
        check_interleavings("dra", "gather-unchecked", strategy="pct", executions=300,
                            out=tmp_path)
    message = str(failure.value)
    assert "pct (depth 3) found a failing interleaving of dra/gather-unchecked" in message
    assert "gather-complete:" in message
    assert "explanation:" in message and "=> device" in message
    (bundle,) = tmp_path.glob("*.json")
    assert f"shmstress replay {bundle}" in message
    assert load_bundle(bundle).variant == "gather-unchecked"


def test_a_correct_variant_passes(tmp_path: Path) -> None:
    result = check_interleavings("dra", "fixed", strategy="pct", executions=50, out=tmp_path)
    assert result.failing is None and result.executions == 50
    assert not list(tmp_path.iterdir())


def test_explore_returns_the_result_without_asserting() -> None:
    result = explore("dra", "original", strategy="random_walk", executions=300, seed=1)
    assert result.failing is not None
    assert result.run.violations
