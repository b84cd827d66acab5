"""An explanation as the text a developer writes under a log snippet in a commit message."""

from __future__ import annotations

import textwrap

from shmstress.analysis.story import Explanation


def render_explanation(explanation: Explanation, indent: str = "") -> str:
    """The seed's form; ``indent`` prefixes every line but the blank one before ``=>``."""
    initial = "; ".join(explanation.initial_state) or "unknown (nothing recorded about it)"
    lines = [f"Initial state: {initial}"]
    lines += [f"- {run.worker}: {', '.join(run.steps)}" for run in explanation.runs]
    lines += ["", f"=> {explanation.outcome}"]
    lines += [f"   while {holding}" for holding in explanation.still_held]
    lines += [f"   {link}" for link in explanation.links]
    lines += [f"(note: {note})" for note in explanation.notes]
    return textwrap.indent("\n".join(lines), indent)
