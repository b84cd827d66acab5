"""Matching an execution's records against the lines of a log, one record at a time.

A log of a real run holds some of its steps (``shmstress import-log``): each line
has a message, fields and a thread. An execution of the model matches the log when
its records, rendered through the tracker's words, contain the lines in the log's
order, with each thread played by one worker throughout and each object name of
the log standing for one object of the model throughout (a renaming, both ways,
per kind of object). The log's own names and the model's are different worlds:
only the renaming ties them.

How much the log may leave out is ``gaps``: ``anywhere`` (any line may be
missing: lines were cut without a mark) or ``marked`` (the log holds every line
of its own messages, except where a ``...`` says lines were left out, and before
its first line and after its last). Under ``marked`` an execution that logs one
of the log's messages where the log has none is off the log, and is abandoned at
that step: that is what makes an order impossible rather than merely unlikely.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from shmstress.plugin.words import Raw

ANYWHERE = "anywhere"
MARKED = "marked"
GAP_RULES = (MARKED, ANYWHERE)


@dataclass(frozen=True)
class Expected:
    """One log line to match: where it is in the file, its thread, message and fields
    (each value as a string, as ``shown`` makes it)."""

    line: int
    thread: int
    message: str
    fields: Mapping[str, str]
    gap_before: bool = False  # a ``...`` between the previous expected line and this one


@dataclass(frozen=True)
class Target:
    lines: tuple[Expected, ...]
    roles: Mapping[int, frozenset[str]]  # thread -> the roles that log all of its messages
    kinds: Mapping[str, str] = field(default_factory=dict)  # field key -> kind, if it differs
    gaps: str = MARKED

    @property
    def vocabulary(self) -> frozenset[str]:
        return frozenset(line.message for line in self.lines)


def shown(value: object) -> str:
    """A field value as a string, the same way for the log's values and the model's."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Seen:
    """A record of the execution, rendered: who, in which role, its message and fields."""

    seq: int
    sub: int
    worker: int
    role: str
    label: str  # the point's or log call's own label, before the words renamed it
    message: str
    fields: Mapping[str, str]


class Offer(enum.Enum):
    MATCHES = "matches"  # it is the next line
    FREE = "free"  # no line of the log, or a line the log may have left out here
    OFF = "off"  # one of the log's messages where the log has none: not this execution


class Matching:
    """How far one execution has matched the log, and the names it bound doing so."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._vocabulary = target.vocabulary
        self.next = 0  # index of the next expected line
        self.thread_worker: dict[int, int] = {}
        self.worker_thread: dict[int, int] = {}
        self.names: dict[str, dict[str, str]] = {}  # kind -> log name -> model name
        self.model_names: dict[str, dict[str, str]] = {}  # kind -> model name -> log name
        self.matched: list[tuple[Expected, Seen]] = []

    @property
    def done(self) -> bool:
        return self.next == len(self.target.lines)

    def in_gap(self) -> bool:
        """May the log have left lines out where the execution is now?"""
        lines = self.target.lines
        return (self.target.gaps == ANYWHERE or self.next == 0 or self.done
                or lines[self.next].gap_before)

    def offer(self, seen: Seen) -> Offer:
        if not self.done and self._fits(self.target.lines[self.next], seen):
            return Offer.MATCHES
        if seen.message in self._vocabulary and not self.in_gap():
            return Offer.OFF
        return Offer.FREE

    def take(self, seen: Seen) -> None:
        """Match ``seen`` to the next line (``offer`` said it fits)."""
        expected = self.target.lines[self.next]
        self.thread_worker[expected.thread] = seen.worker
        self.worker_thread[seen.worker] = expected.thread
        for key, log_value, model_value in self._pairs(expected, seen):
            kind = self.target.kinds.get(key, key)
            self.names.setdefault(kind, {})[log_value] = model_value
            self.model_names.setdefault(kind, {})[model_value] = log_value
        self.matched.append((expected, seen))
        self.next += 1

    def may_play(self, worker: int, role: str, thread: int) -> bool:
        """Can ``worker`` be the one that logged ``thread``'s lines?"""
        bound = self.thread_worker.get(thread)
        if bound is not None:
            return bound == worker
        return worker not in self.worker_thread and role in self.target.roles.get(thread, ())

    def _fits(self, expected: Expected, seen: Seen) -> bool:
        if seen.message != expected.message:
            return False
        if not self.may_play(seen.worker, seen.role, expected.thread):
            return False
        for key, log_value, model_value in self._pairs(expected, seen):
            kind = self.target.kinds.get(key, key)
            bound = self.names.get(kind, {}).get(log_value)
            if bound is not None and bound != model_value:
                return False
            owner = self.model_names.get(kind, {}).get(model_value)
            if owner is not None and owner != log_value:
                return False
        return True

    @staticmethod
    def _pairs(expected: Expected, seen: Seen) -> list[tuple[str, str, str]]:
        """(key, log value, model value) of every field both sides have."""
        return [(key, value, seen.fields[key]) for key, value in expected.fields.items()
                if key in seen.fields]
