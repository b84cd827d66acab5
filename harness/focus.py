"""What a failure is about in a recording: its objects, its worker, and the window of points.

The snippet and the explanation must talk about the same steps, so both take
their window from here. The tracker names the objects and, where it knows
it, the first point of the operation that went wrong (a gather's start);
otherwise the window reaches back over the last few events of those objects.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness import registry
from harness.errors import ShmstressError
from harness.log_words import LogWords, Scope, Subject, words_for
from harness.recording import Record, Recording
from harness.result import RunResult, Violation

FALLBACK_EVENTS = 8
"""Without a start from the tracker, the window reaches back over this many object events."""

MAX_FALLBACK_POINTS = 400
"""...but never further back than this many points before the violation."""


@dataclass(frozen=True)
class Focus:
    violation: Violation
    words: LogWords
    scope: Scope
    start: int  # first sequence number of the window
    end: int  # last sequence number of the window (the violation's point)
    worker: int | None  # the worker whose operation went wrong, if the violation names one
    subjects: frozenset[Subject]
    operation: bool  # the tracker gave the start: the window is one operation of ``worker``

    def relevance(self, recording: Recording, record: Record) -> tuple[bool, bool]:
        """(names an involved object, names only other objects) for a record."""
        if not record.fields:
            return False, False
        named = self.words.subjects(label_text(recording, record), dict(record.fields))
        involved = not self.subjects.isdisjoint(named)
        return involved, bool(named) and not involved


def words_of(result: RunResult) -> LogWords:
    """The run's tracker's words; the defaults if the tracker cannot be loaded here."""
    try:
        tracker = registry.load(result.config.tracker)
    except ShmstressError:
        return LogWords()
    return words_for(tracker, result.config.params)


def label_text(recording: Recording, record: Record) -> str:
    return recording.labels[record.label].text


def names_subject(
    words: LogWords, recording: Recording, record: Record, subjects: frozenset[Subject]
) -> bool:
    if not subjects or not record.fields:
        return False
    named = words.subjects(label_text(recording, record), dict(record.fields))
    return not subjects.isdisjoint(named)


def focus(result: RunResult, violation: Violation | None = None) -> Focus | None:
    """The window of a violation (the run's first by default); None without a recording."""
    recording = result.recording
    chosen = violation or result.first_violation
    if recording is None or chosen is None or not (recording.records or recording.steps):
        return None
    words = words_of(result)
    scope = words.scope(chosen.invariant, chosen.fields)
    last = recording.records[-1].seq if recording.records else len(recording.steps) - 1
    end = chosen.seq if chosen.seq is not None else last
    worker = scope.worker
    if worker is None and chosen.worker is not None:
        worker = chosen.worker.worker_id
    subjects = frozenset(scope.subjects)
    start = scope.start if scope.start is not None else _fallback_start(
        words, recording, subjects, end
    )
    return Focus(chosen, words, scope, max(0, min(start, end)), end, worker, subjects,
                 operation=scope.start is not None)


def _fallback_start(
    words: LogWords, recording: Recording, subjects: frozenset[Subject], end: int
) -> int:
    floor = end - MAX_FALLBACK_POINTS
    seen: list[int] = []
    for record in reversed(recording.records):
        if record.seq > end:
            continue
        if record.seq < floor or len(seen) == FALLBACK_EVENTS:
            break
        if names_subject(words, recording, record, subjects):
            seen.append(record.seq)
    return min(seen) if seen else max(0, end - FALLBACK_EVENTS)
