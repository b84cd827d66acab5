"""A failure analysed once, into data: its focus, its story, its explanation, its snippet.

Every front end (the run summary, replay and shrink output, a campaign's record,
a pytest message, the report page) renders from this one analysis, so the
snippet and the explanation always talk about the same window and steps, and
the recording is read once per failure.
"""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.analysis.focus import Focus, focus
from shmstress.analysis.snippet import Snippet, snippet
from shmstress.analysis.story import Explanation, StoryStep, explanation, story
from shmstress.core.result import RunResult, Violation
from shmstress.plugin.wording import Wording


@dataclass(frozen=True)
class FailureAnalysis:
    violation: Violation
    focus: Focus
    story: tuple[StoryStep, ...]
    explanation: Explanation
    snippet: Snippet


def analyse(
    result: RunResult, wording: Wording, violation: Violation | None = None
) -> FailureAnalysis | None:
    """Analyse ``violation`` (the run's principal one by default); None without a recording."""
    recording = result.recording
    chosen = violation or result.principal_violation
    if recording is None or chosen is None:
        return None
    found = focus(recording, chosen, wording)
    if found is None:
        return None
    told = story(found, recording.steps)
    return FailureAnalysis(
        violation=chosen,
        focus=found,
        story=told,
        explanation=explanation(found, told, result.workers, recording),
        snippet=snippet(found, told, recording),
    )
