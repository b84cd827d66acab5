"""Which log lines a failure's snippet quotes, and where it cuts: data, rendered elsewhere.

The snippet shows the tracker's upstream-style messages (verbosity up to
``SNIPPET_VERBOSITY``) and the story's steps that begin a holding (chattier,
but the explanation rests on them): within the window, those about the
involved objects and the operation's own; before it, the last few about the
involved objects, which say how the initial state arose. A cut (``None``)
marks where visible lines were left out.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator, Sequence

from shmstress.analysis.focus import Focus
from shmstress.analysis.story import StoryStep
from shmstress.core.trace import Record, Recording

SNIPPET_VERBOSITY = 1
"""The snippet shows upstream-style messages and other changes of shared state."""

SNIPPET_LEAD = 3
"""Events of the involved objects shown from before the window: how the initial state arose."""

SNIPPET_MAX_LINES = 60

Snippet = tuple[Record | None, ...]
"""The quoted records in global order; None where lines were cut."""


def snippet(found: Focus, told: Sequence[StoryStep], recording: Recording) -> Snippet:
    """The records the snippet of ``found`` quotes, with cuts."""
    holding = frozenset((step.worker, step.seq) for step in told if step.opens)
    levels: dict[int, int] = {}

    def visible(record: Record) -> bool:
        level = levels.get(record.label)
        if level is None:
            level = levels[record.label] = found.words.verbosity(found.label(record))
        return level <= SNIPPET_VERBOSITY or (record.worker, record.seq) in holding

    # (position among the visible records, record): positions decide where a cut falls.
    kept: list[tuple[int, Record]] = []
    position = 0
    for record in found.window:
        if not visible(record):
            continue
        involved, elsewhere = found.relevance(record)
        if involved or found.own_context(record, elsewhere):
            kept.append((position, record))
        position += 1
    lead: list[tuple[int, Record]] = []
    position = 0
    for record in _before(recording, found.start):
        if len(lead) == SNIPPET_LEAD:
            break
        if not visible(record):
            continue
        position -= 1
        if found.relevance(record)[0]:
            lead.append((position, record))
    chosen = [*reversed(lead), *kept]
    if len(chosen) > SNIPPET_MAX_LINES:
        half = SNIPPET_MAX_LINES // 2
        chosen = chosen[:half] + chosen[-half:]
    lines: list[Record | None] = []
    previous: int | None = None
    for index, record in chosen:
        if previous is not None and index != previous + 1:
            lines.append(None)
        lines.append(record)
        previous = index
    return tuple(lines)


def _before(recording: Recording, start: int) -> Iterator[Record]:
    """Points and log calls before point ``start``, latest first."""
    points = bisect.bisect_left(recording.records, start, key=lambda r: r.seq)
    logs = bisect.bisect_left(recording.logs, start, key=lambda r: r.seq)
    return heapq.merge(reversed(recording.records[:points]), reversed(recording.logs[:logs]),
                       key=lambda r: (r.seq, r.sub), reverse=True)
