"""The facts of a failure's objects over time, folded once from the recording.

A tracker's words say what each step makes true of an object (``effects``).
Folding those effects over the recorded steps gives the objects' state at any
point: before the window (the explanation's initial state), when the
operation began (who held an object then), and after the violation (who still
holds it). ``FactHistory`` keeps every setting in order, so all three come
from one pass over the recording.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from shmstress.plugin.words import Subject, Words


@dataclass(frozen=True)
class Setting:
    """Who last set a fact of an object, at which point, and to what."""

    holds: bool
    worker: int  # -1: the fact is the object's state when the run started
    seq: int


Fact = tuple[Subject, str]
Facts = dict[Fact, Setting]


class FactHistory:
    """Every setting of the wanted objects' facts, in the recording's global order."""

    def __init__(self, words: Words, subjects: Iterable[Subject], from_start: bool) -> None:
        self.words = words
        self.wanted = frozenset(subjects)
        self._initial: Facts = {}
        if from_start:  # nothing was lost: the tracker's initial facts hold at point 0
            for subject in self.wanted:
                for fact, holds in words.initial_facts(subject).items():
                    self._initial[(subject, fact)] = Setting(holds, -1, -1)
        self._settings: list[tuple[Fact, Setting]] = []

    def note(self, label: str, fields: Mapping[str, object], worker: int, seq: int) -> None:
        """Fold one recorded point or log call (in global order)."""
        for effect in self.words.effects(label, fields):
            if effect.subject in self.wanted:
                self._settings.append(
                    ((effect.subject, effect.fact), Setting(effect.holds, worker, seq)))

    def at(self, until: int) -> Facts:
        """The facts made by the records before point ``until``."""
        facts = dict(self._initial)
        for fact, setting in self._settings:
            if setting.seq >= until:
                break
            facts[fact] = setting
        return facts

    def held(self, until: int) -> list[tuple[Subject, str, Setting]]:
        """The holdings a worker still holds just before point ``until``."""
        return [(subject, fact, setting) for (subject, fact), setting in self.at(until).items()
                if fact in self.words.holdings and setting.holds and setting.worker >= 0]
