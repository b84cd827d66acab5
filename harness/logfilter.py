"""Picking the events of some objects out of a klog-style text log.

Works on text, not on a recording, so it serves any written ``run.log``
(the user's own, or one from a CI artifact) without the run that made it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from harness.klog import Raw, parse_line

_TRAILING_NUMBER = re.compile(r"([0-9]+)$")


@dataclass(frozen=True)
class EventFilter:
    """Objects of interest; an event matches if it names any of them (no objects: all match)."""

    claims: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    pids: tuple[int, ...] = ()

    def matches(self, pid: int, fields: Mapping[str, object]) -> bool:
        if not (self.claims or self.devices or self.pids):
            return True
        return (
            pid in self.pids
            or _names(fields.get("claim"), self.claims)
            or _names(fields.get("device"), self.devices)
        )


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


def filter_events(text: str, wanted: EventFilter) -> Iterator[str]:
    """The events of ``text`` that ``wanted`` matches; lines that are not events are skipped."""
    for event in split_events(text):
        try:
            parsed = parse_line(event)
        except ValueError:
            continue
        if wanted.matches(parsed.pid, parsed.fields):
            yield event


def _names(value: object, wanted: tuple[str, ...]) -> bool:
    if value is None or not wanted:
        return False
    text = value.text if isinstance(value, Raw) else str(value)
    for name in wanted:
        if text == name or text.endswith("/" + name):
            return True
        if name.isdigit():
            number = _TRAILING_NUMBER.search(text)
            if number is not None and int(number.group(1)) == int(name):
                return True
    return False
