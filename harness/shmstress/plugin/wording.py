"""A tracker's wording of one run: its words, and what its invariants say a violation is about.

Analysis and rendering take a ``Wording`` instead of reloading the tracker:
it is built once per run (or once per log file, from the tracker its header
names), with the run's parameters and the defaults for the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from shmstress.core.crash import CRASH
from shmstress.core.errors import PluginError, ShmstressError
from shmstress.core.result import NO_PROGRESS
from shmstress.plugin import registry
from shmstress.plugin.tracker import Invariant, Tracker
from shmstress.plugin.words import Scope, Words


@dataclass(frozen=True)
class Wording:
    words: Words = field(default_factory=Words)
    invariants: Mapping[str, Invariant] = field(default_factory=dict)
    params: Mapping[str, int] = field(default_factory=dict)

    def scope(self, invariant: str, fields: Mapping[str, int]) -> Scope:
        """What a violation is about: its invariant's ``scope`` (every field an object for a
        violation the harness itself reports, such as a deadlock)."""
        found = self.invariants.get(invariant)
        if invariant == CRASH and found is None:  # about no object: the steps that led to it
            return Scope(subjects=(), worker=fields.get("worker"))
        if invariant == NO_PROGRESS and found is None:  # from where the workers got stuck
            return Scope(subjects=(), worker=fields.get("worker"), start=fields.get("from"))
        if found is None:
            return Scope(subjects=tuple(fields.items()))
        return found.scope(fields, self.params)

    def outcome(self, invariant: str, fields: Mapping[str, int]) -> str | None:
        """The ``=> what broke`` line; None: the violation's own message."""
        found = self.invariants.get(invariant)
        return None if found is None else found.outcome(fields, self.params)


def wording_of(tracker_cls: type[Tracker], params: Mapping[str, int]) -> Wording:
    """The wording of ``tracker_cls`` for ``params`` (missing ones at their defaults)."""
    full = {name: p.default for name, p in tracker_cls.parameters.items()} | dict(params)
    words = tracker_cls.words(full)
    if not isinstance(words, Words):
        raise PluginError(f"tracker {tracker_cls.name}: words() must return a shmstress.api."
                          f"Words, got {type(words).__name__}")
    return Wording(words, {inv.name: inv for inv in tracker_cls.invariants}, full)


def wording_by_name(name: str, params: Mapping[str, int]) -> Wording:
    """The wording of the tracker named ``name``; the plain defaults if it cannot be loaded
    here (a log or bundle from a tracker this machine does not have)."""
    try:
        return wording_of(registry.load(name), params)
    except ShmstressError:
        return Wording(params=dict(params))


def declares_accesses(tracker_cls: type[Tracker], params: Mapping[str, int]) -> bool:
    """The tracker's words say what its steps read and write (they override
    ``Words.accesses``): a search over its footprints can prune soundly."""
    words = wording_of(tracker_cls, params).words
    return type(words).accesses is not Words.accesses
