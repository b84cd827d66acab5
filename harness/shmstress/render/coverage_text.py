"""What a clean search covered, in words (``controlled.coverage`` holds the data)."""

from __future__ import annotations

from shmstress.controlled.coverage import Coverage, Search


def _member(name: str, count: int, searches: dict[str, Search]) -> str:
    """``random walk: 20``; a bounded member says where its search stands."""
    search = searches.get(name)
    if search is None:
        return f"{name}: {count:,}"
    if search.finished:
        return f"{name}: {count:,}, its search finished"
    return f"{name}: {count:,} of at least {search.schedules_at_least:,} schedules"


def coverage_lines(coverage: Coverage, required: bool) -> list[str]:
    """``covered: ...``; a bounded search run alone, whether it finished; and, where
    coverage was thin, ``thin coverage: ...`` with what ``--require-coverage`` does about
    it (a bounded search the budget cut is thin: it says how far it got)."""
    searches = {search.strategy: search for search in coverage.searches}
    parts = [f"{coverage.executions:,} executions"]
    if coverage.members:
        parts[0] += " (" + ", ".join(_member(name, count, searches)
                                     for name, count in coverage.members) + ")"
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
    for search in coverage.searches:
        if coverage.alone and search.finished:
            lines.append(f"  the {search.strategy} search finished: it ran all "
                         f"{search.schedules_run:,} schedules it had to try, and none is left "
                         "within its bound")
    thin = coverage.thin()
    if thin:
        consequence = ("--require-coverage: exit 5" if required else
                       "--require-coverage makes this exit 5")
        lines.append("  thin coverage: " + "; ".join(thin) + f" ({consequence})")
    return lines
