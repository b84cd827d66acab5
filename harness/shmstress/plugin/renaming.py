"""A tracker's words with the objects named as a log named them (``shmstress import-log``).

A schedule found from a real log runs on the model's objects (claim 1, device 0);
its explanation should read in the log's names, since those are what the developer
knows the failure by. The renaming is data (model name -> log name, as the matching
bound them), applied where the words name things: rendered field values that are
exactly a renamed name, and the names in ``name``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from shmstress.core.access import Access
from shmstress.plugin.words import Effect, Fields, Subject, Words


def rename_text(text: str, names: Mapping[str, str]) -> str:
    """``text`` with every model name in it replaced by the log's (longest first, so a
    name that holds another is replaced whole); numbers are values and stay."""
    for model in sorted((name for name in names if not name.isdigit()), key=len,
                        reverse=True):
        text = text.replace(model, names[model])
    return text


def renamed(words: Words, names: Mapping[str, str]) -> Words:
    """``words`` naming objects as ``names`` (model name -> log name) says; its class-level
    tables (kinds, verbosities) are the words' own."""
    tables = {"kinds": words.kinds, "related": words.related,
              "verbosities": words.verbosities, "default_verbosity": words.default_verbosity}
    cls: type[Renamed] = type(f"Renamed{type(words).__name__}", (Renamed,), tables)
    return cls(words, names)


class Renamed(Words):
    def __init__(self, words: Words, names: Mapping[str, str]) -> None:
        self._words = words
        self._names = dict(names)
        self.logger = words.logger
        self.facts = words.facts
        self.holdings = words.holdings

    def event(self, label: str, fields: Fields) -> tuple[str, Fields]:
        message, shown = self._words.event(label, fields)
        return message, tuple(
            (key, self._names.get(value, value) if isinstance(value, str) else value)
            for key, value in shown)

    def field_namer(self, key: str) -> Callable[[int], object] | None:
        return self._words.field_namer(key)

    def verbosity(self, label: str) -> int:
        return self._words.verbosity(label)

    def step(self, label: str, fields: Mapping[str, object]) -> str | None:
        return self._words.step(label, fields)

    def subjects(self, label: str, fields: Mapping[str, object]) -> tuple[Subject, ...]:
        return self._words.subjects(label, fields)

    def effects(self, label: str, fields: Mapping[str, object]) -> tuple[Effect, ...]:
        return self._words.effects(label, fields)

    def accesses(self, label: str, fields: Mapping[str, object]) -> tuple[Access, ...] | None:
        return self._words.accesses(label, fields)

    def initial_facts(self, subject: Subject) -> Mapping[str, bool]:
        return self._words.initial_facts(subject)

    def name(self, subject: Subject) -> str:
        return rename_text(self._words.name(subject), self._names)

    def labels(self) -> frozenset[str]:
        return self._words.labels()
