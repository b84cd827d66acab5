"""What a clean search covered, in words (``controlled.coverage`` holds the data)."""

from __future__ import annotations

from shmstress.controlled.coverage import Coverage


def coverage_lines(coverage: Coverage, required: bool) -> list[str]:
    """``covered: ...`` and, where coverage was thin, ``thin coverage: ...`` with what
    ``--require-coverage`` does about it."""
    parts = [f"{coverage.executions:,} executions"]
    if coverage.members:
        parts[0] += " (" + ", ".join(f"{name}: {count:,}" for name, count in coverage.members) + ")"
    parts.append(f"at most {coverage.max_preemptions} preemption"
                 f"{'s' if coverage.max_preemptions != 1 else ''} in an execution")
    if coverage.depths:
        parts.append("PCT depth" + ("s " if len(coverage.depths) > 1 else " ")
                     + ", ".join(map(str, coverage.depths)))
    if coverage.yields is not None:
        parts.append(f"{coverage.yields:,} yields seen")
    if coverage.step_bound:
        parts.append(f"{coverage.step_bound:,} cut at --max-steps")
    lines = ["  covered: " + "; ".join(parts)]
    thin = coverage.thin()
    if thin:
        consequence = ("--require-coverage: exit 5" if required else
                       "--require-coverage makes this exit 5")
        lines.append("  thin coverage: " + "; ".join(thin) + f" ({consequence})")
    return lines
