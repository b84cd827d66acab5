"""What a failure is about in a recording: its objects, its worker, and the window of points.

The snippet and the explanation must talk about the same steps, so both take
their window from here. The tracker names the objects and, where it knows
it, the first point of the operation that went wrong (a gather's start);
otherwise the window reaches back over the last few events of those objects.
Either way it reaches further back to where a worker began *holding* one of
the objects (a fact in the tracker's ``holdings``, such as an event popped and
not yet delivered) if it still held it when the operation began: that worker
is part of the story even though none of its steps fall inside the operation.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from shmstress.core.errors import ShmstressError
from shmstress.core.result import RunResult, Violation
from shmstress.core.trace import Record, Recording
from shmstress.plugin import registry
from shmstress.plugin.words import LogWords, Scope, Subject, words_for

FALLBACK_EVENTS = 8
"""Without a start from the tracker, the window reaches back over this many object events."""

MAX_FALLBACK_POINTS = 400
"""...but never further back than this many points before the violation (nor to a holding)."""


@dataclass(frozen=True)
class Setting:
    """Who last set a fact of an object, at which point, and to what."""

    holds: bool
    worker: int  # -1: the fact is the object's state when the run started
    seq: int


Facts = dict[tuple[Subject, str], Setting]


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
    operation_start: int  # where that operation (or the chosen window) began; >= start
    horizon: int  # from here on every worker's records are still in its ring

    def relevance(self, recording: Recording, record: Record) -> tuple[bool, bool]:
        """(names an involved object, names only other objects) for a record."""
        if not record.fields:
            return False, False
        named = self.words.subjects(label_text(recording, record), dict(record.fields))
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

    def facts(self, recording: Recording, until: int) -> Facts:
        """The involved objects' facts from the records before point ``until``."""
        return fold_facts(self.words, recording, self.subjects, self.horizon, until)


def words_of(result: RunResult) -> LogWords:
    """The run's tracker's words; the defaults if the tracker cannot be loaded here."""
    return tracker_words(result.config.tracker, result.config.params)


def tracker_words(name: str, params: Mapping[str, int]) -> LogWords:
    """The words of tracker ``name`` (missing parameters at their defaults), or the defaults."""
    try:
        tracker = registry.load(name)
    except ShmstressError:
        return LogWords()
    defaults = {key: parameter.default for key, parameter in tracker.parameters.items()}
    return words_for(tracker, defaults | dict(params))


def label_text(recording: Recording, record: Record) -> str:
    return recording.labels[record.label].text


def merged(recording: Recording) -> Iterator[Record]:
    """Points and log calls in global order: by sequence number, a point before its logs."""
    return heapq.merge(recording.records, recording.logs, key=lambda r: (r.seq, r.sub))


def names_subject(
    words: LogWords, recording: Recording, record: Record, subjects: frozenset[Subject]
) -> bool:
    if not subjects or not record.fields:
        return False
    named = words.subjects(label_text(recording, record), dict(record.fields))
    return not subjects.isdisjoint(named)


def _complete_from(recording: Recording) -> int:
    """First sequence number from which every worker's records are all still in its ring."""
    horizon = 0
    for worker in recording.ring_lost:
        kept = [r.seq for r in recording.records if r.worker == worker]
        horizon = max(horizon, min(kept) if kept else 0)
    return horizon


def fold_facts(
    words: LogWords, recording: Recording, subjects: Iterable[Subject], horizon: int, until: int
) -> Facts:
    """Facts of ``subjects`` made by the records before point ``until``, each with its setter.

    From the run's start (the tracker's initial facts) if nothing was lost,
    else only from ``horizon`` on, where the records are complete.
    """
    wanted = frozenset(subjects)
    facts: Facts = {}
    if horizon == 0:
        for subject in wanted:
            for fact, holds in words.initial_facts(subject).items():
                facts[(subject, fact)] = Setting(holds, -1, -1)
    for record in merged(recording):
        if record.seq >= until:
            break
        if record.seq < horizon or not record.fields:
            continue
        for effect in words.effects(label_text(recording, record), dict(record.fields)):
            if effect.subject in wanted:
                facts[(effect.subject, effect.fact)] = Setting(
                    effect.holds, record.worker, record.seq
                )
    return facts


def held(words: LogWords, facts: Facts) -> list[tuple[Subject, str, Setting]]:
    """The holdings among ``facts`` that a worker still holds."""
    return [
        (subject, fact, setting) for (subject, fact), setting in facts.items()
        if fact in words.holdings and setting.holds and setting.worker >= 0
    ]


def focus(result: RunResult, violation: Violation | None = None) -> Focus | None:
    """The window of a violation (the run's first by default); None without a recording."""
    recording = result.recording
    chosen = violation or result.principal_violation
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
    begin = scope.start if scope.start is not None else _fallback_start(
        words, recording, subjects, end
    )
    begin = max(0, min(begin, end))
    horizon = _complete_from(recording)
    holding = held(words, fold_facts(words, recording, subjects, horizon, begin))
    reach = [s.seq for _, _, s in holding if s.seq >= begin - MAX_FALLBACK_POINTS]
    return Focus(chosen, words, scope, min([begin, *reach]), end, worker, subjects,
                 operation=scope.start is not None, operation_start=begin, horizon=horizon)


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
