"""An explanation as the text a developer writes under a log snippet in a commit message."""

from __future__ import annotations

import textwrap

from shmstress.analysis.story import Explanation, InDoubt, LostRecords
from shmstress.core.trace import step_number


def render_explanation(explanation: Explanation, indent: str = "") -> str:
    """The seed's form; ``indent`` prefixes every line but the blank one before ``=>``.

    An initial state known only in part says so on its first line, then names each fact
    in doubt with what the kept records last said, and what the rings lost."""
    initial = "; ".join(explanation.initial_state)
    if explanation.partial:
        lines = [f"Initial state (partial, the rings wrapped: raise --ring-size): "
                 f"{initial or 'nothing known for certain'}"]
        lines += [f"  in doubt: {_doubt(doubt)}" for doubt in explanation.in_doubt]
        lines += [f"  lost: {_lost(lost)}" for lost in explanation.lost]
    else:
        lines = [f"Initial state: {initial or 'unknown (nothing recorded about it)'}"]
    lines += [f"- {run.worker}: {', '.join(run.steps)}" for run in explanation.runs]
    lines += ["", f"=> {explanation.outcome}"]
    lines += [f"   while {holding}" for holding in explanation.still_held]
    lines += [f"   {link}" for link in explanation.links]
    lines += [f"(note: {note})" for note in explanation.notes]
    return textwrap.indent("\n".join(lines), indent)


def _doubt(doubt: InDoubt) -> str:
    where = ("at the run's start" if doubt.seq < 0
             else f"at point {step_number(doubt.seq)} by {doubt.worker}")
    return f"{doubt.phrase} as recorded {where}; a lost record may have changed it since"


def _lost(lost: LostRecords) -> str:
    if lost.points == 0:
        return f"the log calls {lost.worker} made before its first point"
    points = "point" if lost.points == 1 else f"{lost.points} points"
    return (f"the first {points} of {lost.worker}, up to point {step_number(lost.through)}, "
            "with their log calls")
