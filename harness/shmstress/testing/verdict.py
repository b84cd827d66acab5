"""The text of a failed stress check: what broke, why, and how to get it back.

A pytest failure message is often all a CI log keeps of a flake, so it carries the
run summary, the explanation when there is one, and every command that brings the
failure back: the bundle replay first (the very schedule), then the seeded rerun
(the same configuration, which finds the race again but not on the same schedule),
and the test with its seed.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from shmstress.campaign.record import outcome_of
from shmstress.campaign.trial import TrialRun
from shmstress.core.result import RunResult
from shmstress.render.failure import FailureReport
from shmstress.repro.bundle import replay_both_ways

Expectation = Literal["clean", "violation"]


@dataclass(frozen=True)
class StressVerdict:
    """A run that did not meet what the test expected of it, and its failure report."""

    expected: Expectation
    result: RunResult
    summary: str
    report: FailureReport


def meets(ran: TrialRun, expected: Expectation) -> bool:
    return outcome_of(ran.result) == expected


def judge(ran: TrialRun, expected: Expectation, report: FailureReport) -> StressVerdict:
    """For a run that failed ``meets``; ``report`` names the bundle as the reader of the
    message types it."""
    return StressVerdict(expected, ran.result, ran.summary(), report)


def render_verdict(verdict: StressVerdict, test_id: str | None = None) -> str:
    result = verdict.result
    config = result.config
    outcome = outcome_of(result)
    if outcome == "error":
        head = f"the run itself failed ({result.exit_reason.value}), so it gave no verdict"
    elif verdict.expected == "clean":
        first = result.principal_violation
        broke = first.invariant if first is not None else "an invariant"
        head = f"variant {config.variant} of tracker {config.tracker} broke {broke}"
    else:
        head = (
            f"variant {config.variant} of tracker {config.tracker} was expected to fail but ran "
            f"clean for {result.points:,} points in {result.elapsed_s:.2f} s; a stress test "
            "that misses a known race is broken (raise the duration or the noise)"
        )
    lines = [f"shmstress: {head}", "", verdict.summary]
    report = verdict.report
    if report.explanation:
        lines += ["", "explanation:", report.explanation.rstrip()]
    if report.snippet:
        lines += ["", "log:", report.snippet.rstrip()]
    lines.append("")
    if report.bundle:
        shell, in_pytest = replay_both_ways(Path(report.bundle))
        lines.append(f"replay the failing schedule: {shell}")
        lines.append(f"  or in pytest: {in_pytest}")
    if report.rerun_command not in verdict.summary:
        lines.append(f"rerun the configuration with its seed: {report.rerun_command}")
    if test_id is not None:
        lines.append(
            f"rerun this test: pytest {shlex.quote(test_id)} --stress-seed {config.seed}"
        )
    return "\n".join(lines)
