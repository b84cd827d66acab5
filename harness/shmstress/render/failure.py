"""The failure report: one analysis of a failure, rendered once, printed by every front end.

``shmstress run``, ``replay`` and ``shrink``, a campaign's results record, a pytest
failure message and ``check_interleavings`` all show the same things about a
failure: the violation, the log lines that matter, the interleaving that broke
it, and the commands that bring it back. They all get them from
``failure_report``, which analyses the recording once (one focus, one fold of
the objects' facts) and renders the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shmstress.analysis.failure import analyse
from shmstress.analysis.swimlane import Swimlane, swimlane
from shmstress.core.result import RunResult, Violation
from shmstress.plugin.wording import Wording, wording_by_name
from shmstress.render.explanation import render_explanation
from shmstress.render.logview import snippet_text
from shmstress.repro.bundle import replay_command


@dataclass(frozen=True)
class FailureReport:
    """What a user needs to chase a failure offline, as text.

    ``bundle`` is the path as the reader of the record or message should type it.
    ``problems`` says what could not be rendered (a broken explainer must not cost a
    nightly campaign its remaining trials, so its errors are kept, not raised).
    """

    violation: Violation | None
    snippet: str | None
    explanation: str | None
    bundle: str | None
    rerun_command: str
    problems: tuple[str, ...] = ()
    headline: str | None = None  # the violated invariant's summary: names the bug, not one run
    swimlane: Swimlane | None = None  # who did what when, from the same analysis

    @property
    def message(self) -> str | None:
        """The headline, then this occurrence's details: reports group failures by the
        first line, so it names the bug, not the pids, points and devices of one run."""
        if self.violation is None:
            return None
        if self.headline is None:
            return self.violation.message
        return f"{self.headline}\n{self.violation.message}"

    @property
    def replay_command(self) -> str:
        """The exact schedule again when there is a bundle; else the seeded rerun."""
        return replay_command(Path(self.bundle)) if self.bundle else self.rerun_command


def failure_report(
    result: RunResult,
    bundle: str | None = None,
    rerun_command: str = "",
    wording: Wording | None = None,
    notes: tuple[str, ...] = (),
) -> FailureReport:
    """The report of ``result``'s principal violation (no snippet or explanation without a
    recording); ``notes`` are problems the caller already knows of (a bundle cut short)."""
    violation = result.principal_violation
    problems = list(notes)
    snippet: str | None = None
    explanation: str | None = None
    headline: str | None = None
    lanes: Swimlane | None = None
    if violation is not None:
        wording = wording or wording_by_name(result.config.tracker, result.config.params)
        invariant = wording.invariants.get(violation.invariant)
        headline = invariant.summary if invariant is not None else None
    if violation is not None and wording is not None and result.recording is not None:
        try:
            analysis = analyse(result, wording, violation)
        except Exception as exc:
            problems.append(f"analysis: {type(exc).__name__}: {exc}")
            analysis = None
        if analysis is not None:
            try:
                snippet = snippet_text(result, wording.words, analysis.snippet) or None
            except Exception as exc:
                problems.append(f"log snippet: {type(exc).__name__}: {exc}")
            try:
                explanation = render_explanation(analysis.explanation)
            except Exception as exc:
                problems.append(f"explanation: {type(exc).__name__}: {exc}")
            try:
                lanes = swimlane(analysis, result.recording.steps, result.workers,
                                 swimlane_title(result))
            except Exception as exc:
                problems.append(f"swimlane: {type(exc).__name__}: {exc}")
    return FailureReport(violation, snippet, explanation, bundle, rerun_command,
                         tuple(problems), headline, lanes)


def swimlane_title(result: RunResult) -> str:
    """``dra gather-unchecked, seed 3: who did what when``: names the run, not the bug."""
    config = result.config
    variant = f" {config.variant}" if config.variant else ""
    seed = f", seed {config.seed}" if config.seed is not None else ""
    return f"{tracker_name(config.tracker)}{variant}{seed}: who did what when"


def tracker_name(tracker: str) -> str:
    """``lock_order.py:LockOrder`` for ``/long/path/lock_order.py:LockOrder``: a title names
    the tracker, the bundle keeps where it was."""
    file, colon, cls = tracker.rpartition(":")
    return f"{Path(file).name}:{cls}" if colon and file else tracker


def report_lines(report: FailureReport, indent: str = "  ") -> list[str]:
    """The snippet and the explanation as sections of a summary."""
    lines: list[str] = []
    inner = indent * 2
    for title, text in (("log snippet", report.snippet), ("explanation", report.explanation)):
        if text:
            lines += [f"{indent}{title}:",
                      *((inner + line) if line.strip() else line for line in text.split("\n"))]
    lines += [f"{indent}note: {problem}" for problem in report.problems]
    return lines
