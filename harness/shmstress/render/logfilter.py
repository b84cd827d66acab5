"""Picking the events of some objects out of a klog-style text log.

Works on text, not on a recording, so it serves any written run log
(the user's own, or one from a CI artifact) without the run that made it.

An object is asked for by kind and name (``claim=6``, ``device=worker-1-device-000``,
any field of any tracker: ``card=3``). A name matches a field value of that
kind that equals it, ends in ``/NAME``, or, for a number, ends in that number
(``claim=553`` finds ``"ns/claim-0553"``). It must name exactly one object in
the log: an exact match wins, and a name that fits several (``device=0`` on
every node) is refused with the candidates, never widened silently. The
tracker's words say which fields name which kind (``previous`` names a
device) and which objects belong to another (a claim's pod): those are
found from the lines that name both, and their events are shown too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from shmstress.core.errors import ConfigError
from shmstress.plugin.words import Raw
from shmstress.render.klog import ParsedLine, parse_line

_TRAILING_NUMBER = re.compile(r"([0-9]+)$")
_SHOWN_CANDIDATES = 5


@dataclass(frozen=True)
class Vocabulary:
    """Which object kind a field names, and which kinds belong to another (from log words)."""

    kinds: Mapping[str, str] = field(default_factory=dict)
    related: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def kind(self, key: str) -> str:
        return self.kinds.get(key, key)


@dataclass(frozen=True)
class EventFilter:
    """Objects of interest as (kind, name), and worker pids; no objects and no pids: all match."""

    objects: tuple[tuple[str, str], ...] = ()
    pids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Event:
    text: str
    parsed: ParsedLine


def split_events(text: str) -> Iterator[str]:
    """Events of a log, each with the continuation lines of its multi-line values."""
    current: list[str] = []
    for line in text.split("\n"):
        if current and (line.startswith("\t") or line.startswith(" >")):
            current.append(line)
            continue
        if current:
            yield "\n".join(current)
        current = [line] if line else []
    if current:
        yield "\n".join(current)


def parse_events(text: str) -> list[Event]:
    """Every event of ``text``; lines that are not events are skipped."""
    events = []
    for chunk in split_events(text):
        try:
            events.append(Event(chunk, parse_line(chunk)))
        except ValueError:
            continue
    return events


def filter_events(
    events: list[Event], wanted: EventFilter, vocabulary: Vocabulary | None = None
) -> Iterator[str]:
    """The events ``wanted`` matches; raises ConfigError for a name that fits no or several."""
    vocabulary = vocabulary or Vocabulary()
    if not (wanted.objects or wanted.pids):
        yield from (event.text for event in events)
        return
    named = [(event, _objects(event, vocabulary)) for event in events]
    names = resolve([objects for _, objects in named], wanted.objects, vocabulary)
    for event, objects in named:
        if event.parsed.pid in wanted.pids or any(
            value in names.get(kind, ()) for kind, value in objects
        ):
            yield event.text


def resolve(
    named_per_event: list[list[tuple[str, str]]],
    objects: Iterable[tuple[str, str]],
    vocabulary: Vocabulary,
) -> dict[str, set[str]]:
    """Kind -> the full names the log uses for the asked-for objects and those related to them,
    given the (kind, name) objects each event names."""
    values: dict[str, set[str]] = {}
    for named in named_per_event:
        for kind, value in named:
            values.setdefault(kind, set()).add(value)
    names: dict[str, set[str]] = {}
    for kind, name in objects:
        names.setdefault(kind, set()).add(_one(kind, name, values.get(kind, set())))
    related: dict[str, set[str]] = {}
    for named in named_per_event:
        for kind, value in named:
            if value in names.get(kind, ()):
                belongs = vocabulary.related.get(kind, ())
                for other_kind, other in named:
                    if other_kind in belongs:
                        related.setdefault(other_kind, set()).add(other)
    for kind, found in related.items():
        names.setdefault(kind, set()).update(found)
    return names


def _one(kind: str, name: str, values: set[str]) -> str:
    if name in values:
        return name
    candidates = sorted(value for value in values if _names(value, name))
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise ConfigError(f"no {kind} named {name!r} in the log")
    shown = ", ".join(candidates[:_SHOWN_CANDIDATES])
    more = f" and {len(candidates) - _SHOWN_CANDIDATES} more" if (
        len(candidates) > _SHOWN_CANDIDATES) else ""
    raise ConfigError(f"{kind} {name!r} is ambiguous: it fits {shown}{more}; give more of "
                      "the name")


def _objects(event: Event, vocabulary: Vocabulary) -> list[tuple[str, str]]:
    """(kind, name) of every field of ``event`` whose value can name an object."""
    found = []
    for key, value in event.parsed.fields.items():
        if isinstance(value, Raw):
            text = value.text
        elif isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            text = str(value)
        else:
            continue
        found.append((vocabulary.kind(key), text))
    return found


def _names(value: str, name: str) -> bool:
    if value.endswith("/" + name):
        return True
    if name.isdigit():
        number = _TRAILING_NUMBER.search(value)
        return number is not None and int(number.group(1)) == int(name)
    return False
