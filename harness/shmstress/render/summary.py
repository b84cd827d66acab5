"""Rendering a RunResult as the text a user reads at the end of a run."""

from __future__ import annotations

from shmstress.core.result import RunResult
from shmstress.render.commands import run_command


def render_summary(result: RunResult) -> str:
    config = result.config
    counts = ", ".join(f"{n} {role}{'s' if n != 1 else ''}" for role, n in config.counts.items())
    params = ", ".join(f"{k}={v}" for k, v in config.params.items())
    lines = [
        f"shmstress run: tracker {config.tracker}, variant {config.variant}, seed {config.seed}",
        f"  workers: {counts}; {params}; noise p={config.noise.probability:g}",
        f"  exit reason: {result.exit_reason.value} ({result.exit_reason.describe()})",
        f"  points: {result.points:,} in {result.elapsed_s:.2f} s "
        f"({result.points_per_s:,.0f} points/s)",
    ]
    if result.drain_timed_out:
        lines.append("  note: the run did not settle within the drain timeout before the stop")
    for crash in result.crashes:
        lines.append("  " + crash.replace("\n", "\n    "))
    if result.violation_count:
        first = result.principal_violation
        shown = len(result.violations)
        lines.append(
            f"  violations: {result.violation_count}"
            + (f" (first {shown} kept)" if shown < result.violation_count else "")
        )
        if first is not None and first.elapsed_s is not None:
            lines.append(
                f"  first violation after {first.elapsed_s:.3f} s, at point {first.seq:,}"
            )
        for violation in result.violations[:10]:
            where = " at rest" if violation.at_rest else (
                f" [{violation.worker.describe()}]" if violation.worker else ""
            )
            lines.append(f"  - {violation.invariant}{where}: {violation.message}")
        if len(result.violations) > 10:
            lines.append(f"  ... and {len(result.violations) - 10} more")
        lines.append("  rerun with the same seed and options:")
        lines.append(f"    {run_command(config)}")
    else:
        lines.append("  violations: none")
    return "\n".join(lines)
