"""Interleaving coverage as a number: how many orders of conflicting accesses a run saw.

A pair (A, B) counts when one worker took location A and then another worker
took location B on the same object, with no access to that object in
between; (B, A) is a different pair. It tells a run that exercised the races
from one that did not, clean or not. Objects are what the tracker's
``Words.subjects`` names; points do not say whether they read or write, so any
two workers' accesses to one object count as conflicting. Points that name no
object (a bare lock acquire) do not count.

It is computed from a recording, so it covers the records the rings kept
(the most recent ones of a long run) and is exactly the same for the same
recorded trace.
"""

from __future__ import annotations

from shmstress.core.trace import Recording
from shmstress.plugin.words import Subject, Words


def conflicting_pairs(recording: Recording, words: Words) -> frozenset[tuple[str, str]]:
    """The distinct ordered (earlier label, later label) pairs of the recorded points."""
    last: dict[Subject, tuple[int, str]] = {}
    pairs: set[tuple[str, str]] = set()
    labels = recording.labels
    for record in recording.records:
        if record.sub:
            continue
        label = labels[record.label].text
        for subject in words.subjects(label, dict(record.fields)):
            before = last.get(subject)
            if before is not None and before[0] != record.worker:
                pairs.add((before[1], label))
            last[subject] = (record.worker, label)
    return frozenset(pairs)


def interleaving_coverage(recording: Recording, words: Words) -> int:
    """The number of distinct conflicting pairs in each order (see the module's docstring)."""
    return len(conflicting_pairs(recording, words))
