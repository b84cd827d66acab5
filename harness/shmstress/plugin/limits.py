"""How much a point, a violation and a run can hold: the limits a tracker author must know."""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.core.control import MAX_LOCKS, MAX_VIOLATION_FIELDS
from shmstress.record.recorder import MAX_FIELDS, MAX_SEQUENCE_ITEMS


@dataclass(frozen=True)
class Limits:
    record_fields: int = MAX_FIELDS
    """Fields one point or log call may carry."""
    sequence_items: int = MAX_SEQUENCE_ITEMS
    """Items one sequence field may carry (record a set's size instead past it)."""
    violation_fields: int = MAX_VIOLATION_FIELDS
    """Integer fields one violation carries."""
    locks: int = MAX_LOCKS
    """Instrumented locks one run may create."""


LIMITS = Limits()
