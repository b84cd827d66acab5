"""The five DRA variants as combinations of two upstream fixes and one redesign."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Traits:
    """What a variant does: deliver events in order, check the revision, use one lock."""

    ordered_events: bool
    checked_gather: bool
    single_lock: bool = False


VARIANTS: dict[str, tuple[Traits, str]] = {
    "gather-unchecked": (
        Traits(ordered_events=True, checked_gather=False),
        "GatherAllocatedState without the revision check: the race of the seed commit (racy)",
    ),
    "events-unordered": (
        Traits(ordered_events=False, checked_gather=True),
        "assume cache lets any caller deliver queued events outside its lock, so Assume can "
        "return before its event reached allocated devices (racy)",
    ),
    "original": (
        Traits(ordered_events=False, checked_gather=False),
        "both root causes of double allocation (racy)",
    ),
    "fixed": (
        Traits(ordered_events=True, checked_gather=True),
        "both upstream fixes: ordered event delivery and the revision check (correct)",
    ),
    "single-lock": (
        Traits(ordered_events=True, checked_gather=True, single_lock=True),
        "assume cache, in-flight claims and allocated devices under one lock (correct)",
    ),
}

RACY = ("events-unordered", "gather-unchecked", "original")
CORRECT = ("fixed", "single-lock")
