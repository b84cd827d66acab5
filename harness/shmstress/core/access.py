"""What a step does to shared state, as far as its point says: the common word for
partial-order reduction (two steps that touch nothing in common commute) and for
explanations (the write a read saw).

A tracker's point stands before a shared access; ``Words.accesses`` says which
objects the step after it reads or writes. An object is a ``(kind, id)`` pair, as
``Words.subjects`` names them; ``EVERY`` as the id means every object of the kind
(a scan of a whole map, a step that changes its size). A step whose accesses are
not declared (``None``) is taken to conflict with every other step: undeclared is
never assumed independent, so a search pruned by these words stays sound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

EVERY = -(1 << 62)
"""An ``Access`` id that stands for every object of its kind."""


@dataclass(frozen=True)
class Access:
    """One object a step reads (``write`` False) or writes (a read-modify-write is a write).

    Where the step's value is known (plain code records it), a write carries the value it
    stored: two writes of one value leave the same state in either order, whatever the
    state before them, so they commute. A read and a write never do, even a write of the
    value the object held when it ran: that held value came from an earlier write, which
    a write of the same value commutes with, so the search could move this write before
    the earlier one and then before the read, where it changes what the read sees (a
    reduced search that took them for independent missed outcomes on small random
    programs against an exhaustive search).
    """

    kind: str
    id: int
    write: bool
    value: object = None  # a write's stored value, where known

    def overlaps(self, other: Access) -> bool:
        """Both name one object (or one names every object of the other's kind)."""
        return self.kind == other.kind and (
            self.id == other.id or EVERY in (self.id, other.id))

    def conflicts(self, other: Access) -> bool:
        """The two do not commute: one object, at least one of them writing, and not two
        writes of one known value.

        ``overlaps`` and the same-value test inlined: DPOR asks this of every pair of steps on
        one object that its scan passes, millions of times on a long execution (two calls
        fewer halved the time of its trace on SCTBench's ``sync02_ok``)."""
        write = self.write
        if not (write or other.write) or self.kind != other.kind:
            return False
        ident, theirs = self.id, other.id
        if ident != theirs and EVERY not in (ident, theirs):
            return False
        if write and other.write:
            value = self.value
            return value is None or type(value) is not type(other.value) or value != other.value
        return True


def conflicting(first: Sequence[Access] | None, second: Sequence[Access] | None) -> bool:
    """Two steps that may not commute; a step with undeclared accesses conflicts with any."""
    if first is None or second is None:
        return True
    return any(a.conflicts(b) for a in first for b in second)


LOCK = "lock"
"""The kind of an instrumented lock's ``Access``: its acquire and release write it."""


@dataclass(frozen=True)
class Footprint:
    """One step of a finished execution: the worker that took it and what it touched
    (None: not declared). Steps are in schedule order, one footprint per step."""

    worker: int
    accesses: tuple[Access, ...] | None
