"""The facts of a failure's objects over time, folded once from the recording.

A tracker's words say what each step makes true of an object (``effects``).
Folding those effects over the recorded steps gives the objects' state at any
point: before the window (the explanation's initial state), when the
operation began (who held an object then), and after the violation (who still
holds it). ``FactHistory`` keeps every setting in order, so all three come
from one pass over the recording.

The tracker's initial facts hold when the run starts. A ring that wrapped
lost its worker's oldest records (``ring_loss``), and any of them may have
set a fact: a fact last set before another worker's lost records is *in
doubt* (``doubted_by``), still known as what the records kept last said, never
stated as the state it was in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from shmstress.analysis.ring_loss import RingLoss
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

    def __init__(
        self, words: Words, subjects: Iterable[Subject], losses: tuple[RingLoss, ...] = ()
    ) -> None:
        self.words = words
        self.wanted = frozenset(subjects)
        self.losses = losses
        self._initial: Facts = {
            (subject, fact): Setting(holds, -1, -1)
            for subject in self.wanted
            for fact, holds in words.initial_facts(subject).items()
        }
        self._settings: list[tuple[Fact, Setting]] = []

    def note(self, label: str, fields: Mapping[str, object], worker: int, seq: int) -> None:
        """Fold one recorded point or log call (in global order)."""
        for effect in self.words.effects(label, fields):
            if effect.subject in self.wanted:
                self._settings.append(
                    ((effect.subject, effect.fact), Setting(effect.holds, worker, seq)))

    def at(self, until: int) -> Facts:
        """The facts made by the records before point ``until`` (some may be ``in_doubt``)."""
        facts = dict(self._initial)
        for fact, setting in self._settings:
            if setting.seq >= until:
                break
            facts[fact] = setting
        return facts

    def doubted_by(self, setting: Setting) -> tuple[RingLoss, ...]:
        """The losses of other workers' records that may have come after ``setting``: a
        worker's own loss is older than every record it kept, and a point's log calls are
        its worker's alone, so only another worker's lost points at or after it count."""
        return tuple(loss for loss in self.losses
                     if loss.worker != setting.worker and loss.through >= setting.seq)

    def held(self, until: int) -> list[tuple[Subject, str, Setting]]:
        """The holdings a worker still holds just before point ``until``."""
        return [(subject, fact, setting) for (subject, fact), setting in self.at(until).items()
                if fact in self.words.holdings and setting.holds and setting.worker >= 0]
