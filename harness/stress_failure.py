"""The text of a failed stress check: what broke, why, and how to get it back.

A pytest failure message is often all a CI log keeps of a flake, so it carries the
run summary, the explanation when there is one, and every command that brings the
failure back: the bundle replay, the seeded rerun, and the test with its seed.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

from harness.result import RunResult
from harness.summary import render_summary
from harness.trial_record import FailureArtifacts, failure_artifacts, outcome_of

Expectation = Literal["clean", "violation"]


@dataclass(frozen=True)
class StressVerdict:
    """Whether a run met what the test expected of it, and the artifacts if it did not."""

    ok: bool
    expected: Expectation
    result: RunResult
    artifacts: FailureArtifacts | None


def judge(result: RunResult, expected: Expectation) -> StressVerdict:
    outcome = outcome_of(result)
    ok = outcome == expected
    return StressVerdict(ok, expected, result, None if ok else failure_artifacts(result))


def render_verdict(verdict: StressVerdict, test_id: str | None = None) -> str:
    result = verdict.result
    config = result.config
    outcome = outcome_of(result)
    if outcome == "error":
        head = f"the run itself failed ({result.exit_reason.value}), so it gave no verdict"
    elif verdict.expected == "clean":
        first = result.first_violation
        broke = first.invariant if first is not None else "an invariant"
        head = f"variant {config.variant} of tracker {config.tracker} broke {broke}"
    else:
        head = (
            f"variant {config.variant} of tracker {config.tracker} was expected to fail but ran "
            f"clean for {result.points:,} points in {result.elapsed_s:.2f} s; a stress test "
            "that misses a known race is broken (raise the duration or the noise)"
        )
    lines = [f"shmstress: {head}", "", render_summary(result)]
    artifacts = verdict.artifacts
    if artifacts is not None and artifacts.explanation:
        lines += ["", "explanation:", artifacts.explanation.rstrip()]
    if artifacts is not None and artifacts.log_snippet:
        lines += ["", "log:", artifacts.log_snippet.rstrip()]
    lines.append("")
    if artifacts is not None and artifacts.bundle:
        lines.append(f"replay: shmstress replay {shlex.quote(artifacts.bundle)}")
    if artifacts is not None and outcome != "violation":  # the summary already has it then
        lines.append(f"rerun: {artifacts.replay_command}")
    if test_id is not None:
        lines.append(
            f"rerun this test: pytest {shlex.quote(test_id)} --stress-seed {config.seed}"
        )
    return "\n".join(lines)
