"""What a failure is about in a recording: its objects, its worker, and the window of points.

The snippet and the explanation must talk about the same steps, so both take
their window from here. The violation's invariant names the objects and,
where it knows it, the first point of the operation that went wrong (a
gather's start); otherwise the window reaches back over the last few events of
those objects. Either way it reaches further back to where a worker began
*holding* one of the objects (a fact in the words' ``holdings``, such as an
event popped and not yet delivered) if it still held it when the operation
began: that worker is part of the story even though none of its steps fall
inside the operation. Where the tracker's words say what its steps read and
write, the window reaches back further still, to where the race started
(``tracker_links``: a stale read, the write the failing worker read from).

``focus`` reads the recording once: one forward pass folds the objects' facts
(``FactHistory``, every record kept, with what the rings lost) and keeps the
records of the window; the fallback start is a bounded look at the points
alone, the horizon of lost records the last point a ring lost (``ring_loss``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field

from shmstress.analysis.enabling import Enabling
from shmstress.analysis.facts import FactHistory
from shmstress.analysis.ring_loss import ring_losses
from shmstress.analysis.tracker_links import tracker_links
from shmstress.core.result import Violation
from shmstress.core.trace import Label, Record, Recording
from shmstress.plugin.wording import Wording
from shmstress.plugin.words import Scope, Subject, Words

FALLBACK_EVENTS = 8
"""Without a start from the tracker, the window reaches back over this many object events."""

MAX_FALLBACK_POINTS = 400
"""...but never further back than this many points before the violation (nor to a holding)."""


@dataclass(frozen=True)
class Focus:
    violation: Violation
    words: Words
    scope: Scope
    start: int  # first sequence number of the window
    end: int  # last sequence number of the window (the violation's point)
    worker: int | None  # the worker whose operation went wrong, if the violation names one
    subjects: frozenset[Subject]
    operation: bool  # the tracker gave the start: the window is one operation of ``worker``
    operation_start: int  # where that operation (or the chosen window) began; >= start
    horizon: int  # from here on every worker's records are still in its ring
    outcome: str | None  # the invariant's own "=> what broke" line, if it words one
    history: FactHistory  # the involved objects' facts, folded once
    window: tuple[Record, ...]  # points and log calls from start to end, in global order
    labels: tuple[Label, ...]  # the recording's string table
    enabling: Enabling = field(default_factory=Enabling)  # back to where the race starts

    def label(self, record: Record) -> str:
        return self.labels[record.label].text

    def relevance(self, record: Record) -> tuple[bool, bool]:
        """(names an involved object, names only other objects) for a record."""
        if not record.fields:
            return False, False
        named = self.words.subjects(self.label(record), dict(record.fields))
        involved = not self.subjects.isdisjoint(named)
        return involved, bool(named) and not involved

    def own_context(self, record: Record, elsewhere: bool) -> bool:
        """Is ``record`` a step of the operation's worker that belongs to the story?

        Within one operation every step of its worker is context; in a window the
        harness chose, that worker's steps about other objects are noise; before
        the operation began, the worker's steps are its earlier business.
        """
        return (
            record.worker == self.worker
            and record.seq >= self.operation_start
            and (self.operation or not elsewhere)
        )


def merged(recording: Recording) -> Iterator[Record]:
    """Points and log calls in global order: by sequence number, a point before its logs."""
    return heapq.merge(recording.records, recording.logs, key=lambda r: (r.seq, r.sub))


def focus(recording: Recording, violation: Violation, wording: Wording) -> Focus | None:
    """The window of ``violation`` in ``recording``; None if nothing was recorded."""
    if not (recording.records or recording.steps):
        return None
    words = wording.words
    scope = wording.scope(violation.invariant, violation.fields)
    last = recording.records[-1].seq if recording.records else len(recording.steps) - 1
    end = violation.seq if violation.seq is not None else last
    worker = scope.worker
    if worker is None and violation.worker is not None:
        worker = violation.worker.worker_id
    subjects = frozenset(scope.subjects)
    start_from = scope.start
    if not subjects and worker is not None and start_from is None:
        subjects, start_from = _last_steps(words, recording, worker, end)
    labels = recording.labels
    begin = start_from if start_from is not None else _fallback_start(
        words, recording, subjects, end
    )
    begin = max(0, min(begin, end))
    losses = ring_losses(recording)
    horizon = max((loss.through + 1 for loss in losses), default=0)
    # the walk starts from the worker that saw the violation (what it read was wrong), which
    # need not be the one whose operation went wrong (the scope's)
    seer = violation.worker.worker_id if violation.worker is not None else worker
    links = tracker_links(recording, words, seer, end, horizon, subjects, scope.names,
                          scope.start)
    earliest = min(begin - MAX_FALLBACK_POINTS, links.start if links.start is not None else end)
    history = FactHistory(words, subjects, losses)
    candidates: list[Record] = []  # the widest window a holding can open
    for record in merged(recording):
        if record.seq > end:
            break
        if record.seq >= earliest:
            candidates.append(record)
        if record.fields:
            history.note(labels[record.label].text, dict(record.fields), record.worker,
                         record.seq)
    reach = [s.seq for _, _, s in history.held(begin) if s.seq >= begin - MAX_FALLBACK_POINTS]
    start = min([begin, *reach, *([] if links.start is None else [links.start])])
    return Focus(
        violation, words, scope, start, end, worker, subjects,
        operation=scope.start is not None, operation_start=begin, horizon=horizon,
        outcome=wording.outcome(violation.invariant, violation.fields), history=history,
        window=tuple(r for r in candidates if r.seq >= start), labels=labels, enabling=links,
    )


def _last_steps(
    words: Words, recording: Recording, worker: int, end: int
) -> tuple[frozenset[Subject], int | None]:
    """A violation about no object, only one worker's (a crash): the objects that worker's
    last two points named, and where the first of them was. Its operation is taken to span
    them (a check, then the act that failed), and the other workers' steps on those objects
    in between join the story."""
    touched: set[Subject] = set()
    steps: list[int] = []
    for record in reversed(recording.records):
        if record.seq > end or record.worker != worker:
            continue
        if len(steps) == 2 or record.seq < end - MAX_FALLBACK_POINTS:
            break
        steps.append(record.seq)
        if record.fields:
            touched.update(words.subjects(recording.labels[record.label].text,
                                          dict(record.fields)))
    return frozenset(touched), (steps[-1] if steps else None)


def _fallback_start(
    words: Words, recording: Recording, subjects: frozenset[Subject], end: int
) -> int:
    floor = end - MAX_FALLBACK_POINTS
    seen: list[int] = []
    for record in reversed(recording.records):
        if record.seq > end:
            continue
        if record.seq < floor or len(seen) == FALLBACK_EVENTS:
            break
        if subjects and record.fields and not subjects.isdisjoint(
            words.subjects(recording.labels[record.label].text, dict(record.fields))
        ):
            seen.append(record.seq)
    return min(seen) if seen else max(0, end - FALLBACK_EVENTS)
