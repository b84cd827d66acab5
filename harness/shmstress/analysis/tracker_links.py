"""Where a tracker failure's race starts: its recorded points as data steps for ``enabling``.

A tracker's point stands before the step it names, and its words say what
that step reads and writes (``Words.accesses``); a point whose words declare
nothing touched nothing the walk can follow, so a tracker without declarations
gets no links and keeps the explanation it had. The walk is the one plain code
uses (``analysis.enabling``), over the points of the last ``REACH`` sequence
numbers before the violation that are still in their rings. A role loops over
its operations, so what its objects looked like long before the race is its
state, not the race: where a read was stale, the links start there.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping

from shmstress.analysis.enabling import DataStep, Enabling, Object, walk
from shmstress.core.access import EVERY, Access
from shmstress.core.trace import Recording
from shmstress.plugin.words import Subject, Words

REACH = 2_000
"""The walk looks at most this many points back from the violation: a race that started
further back is told by its symptom only."""


def tracker_steps(
    recording: Recording, words: Words, since: int, until: int, subjects: frozenset[Subject]
) -> list[DataStep]:
    """The points from ``since`` to ``until`` as data steps, each with what its point and the
    nested acquires after it declare (as a step's footprint for partial-order reduction is;
    a log call declares nothing). A point is about the failure if
    it names one of its ``subjects`` (every point is, when the failure names none). No step
    has a site: a role loops over its points, so a later read of an object at any point is a
    fresh look at it."""
    labels = recording.labels
    nested: dict[int, list[Access]] = {}  # a nested acquire's record adds what it declares
    logs = recording.logs
    for log in logs[bisect.bisect_left(logs, since, key=lambda r: r.seq):]:
        if log.seq > until:
            break
        declared = words.accesses(labels[log.label].text, dict(log.fields))
        if declared:
            nested.setdefault(log.seq, []).extend(declared)
    records = recording.records
    steps = []
    for record in records[bisect.bisect_left(records, since, key=lambda r: r.seq):]:
        if record.seq > until:
            break
        label = labels[record.label].text
        fields = dict(record.fields)
        accesses = (*(words.accesses(label, fields) or ()), *nested.get(record.seq, ()))
        names = frozenset(words.subjects(label, fields))
        about = not subjects or not subjects.isdisjoint(names)
        steps.append(DataStep(record.seq, record.worker, accesses, about=about, names=names))
    return steps


def tracker_links(
    recording: Recording, words: Words, worker: int | None, end: int, horizon: int,
    subjects: frozenset[Subject], names: Mapping[Subject, str], since: int | None = None,
) -> Enabling:
    """The links from ``worker``'s violation, found after its point ``end``, back to where
    its race starts; none without a worker or a declared access. ``since``: where the
    operation that went wrong began, if the tracker said (the worker's reads before it
    were other business)."""
    if worker is None:
        return Enabling()
    steps = tracker_steps(recording, words, max(horizon, end - REACH), end, subjects)
    if not any(step.accesses for step in steps):
        return Enabling()

    def name(what: Object) -> str:
        if what[1] == EVERY:
            return f"every {what[0]}"
        return names.get(what) or words.name(what)

    return walk(steps, worker, end + 1, name, since or 0).from_stale_read()
