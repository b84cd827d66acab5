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
from dataclasses import dataclass

from shmstress.analysis.focus import Focus
from shmstress.analysis.story import StoryStep
from shmstress.core.trace import Record, Recording

SNIPPET_VERBOSITY = 1
"""The snippet shows upstream-style messages and other changes of shared state."""

SNIPPET_LEAD = 3
"""Events of the involved objects shown from before the window: how the initial state arose."""

SNIPPET_MAX_LINES = 60


@dataclass(frozen=True)
class Repeated:
    """The record before it came again ``times`` more times in a row (a worker spinning):
    one line says so, so a spin does not fill the snippet with identical lines."""

    times: int


Snippet = tuple[Record | Repeated | None, ...]
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
    chosen = _folded([*reversed(lead), *kept])
    if len(chosen) > SNIPPET_MAX_LINES:
        half = SNIPPET_MAX_LINES // 2
        chosen = chosen[:half] + chosen[-half:]
    lines: list[Record | Repeated | None] = []
    previous: int | None = None
    for index, line in chosen:
        if previous is not None and index != previous + 1 and not isinstance(line, Repeated):
            lines.append(None)
        lines.append(line)
        previous = index
    return tuple(lines)


def _folded(chosen: list[tuple[int, Record]]) -> list[tuple[int, Record | Repeated]]:
    """Each run of records that repeat the one before (same worker, point and fields, with
    nothing cut between them) as its first record and a ``Repeated`` count."""
    out: list[tuple[int, Record | Repeated]] = []
    run: list[tuple[int, Record]] = []

    def flush() -> None:
        if len(run) > 1:
            out.append((run[-1][0], Repeated(len(run) - 1)))
        run.clear()

    for index, record in chosen:
        if run and (index != run[-1][0] + 1 or _key(record) != _key(run[0][1])):
            flush()
        if not run:
            out.append((index, record))
        run.append((index, record))
    flush()
    return out


def _key(record: Record) -> tuple[object, ...]:
    return record.worker, record.label, record.sub, record.fields


def _before(recording: Recording, start: int) -> Iterator[Record]:
    """Points and log calls before point ``start``, latest first."""
    points = bisect.bisect_left(recording.records, start, key=lambda r: r.seq)
    logs = bisect.bisect_left(recording.logs, start, key=lambda r: r.seq)
    return heapq.merge(reversed(recording.records[:points]), reversed(recording.logs[:logs]),
                       key=lambda r: (r.seq, r.sub), reverse=True)
