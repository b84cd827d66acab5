"""Reading a klog or ktesting log that another program wrote: entries, elisions, the rest.

``klog.parse_line`` takes apart the lines shmstress writes; a log from a real
CI run comes in more layouts, and ``shmstress import-log`` has to read it as
it was pasted into an issue or a commit message:

- klog's own header, ``I0115 15:11:04.407714   18778 file.go:263] "msg" key="value"``;
- ktesting's, behind Go testing's caller prefix: ``logger.go:NN: I0115 15:11:04.407714]``
  or, as in the seed log, ``dra_manager.go:263: I0115 15:11:04.407714   18778] scheduler:``;
- the whole text indented (a quote in a commit message), continuation lines of
  multi-line values indented once more by Go's testing package;
- ``...`` lines, where whoever cut the log left lines out: kept as gaps, since
  where lines are missing is something the log says.

Anything else is kept too, as an unreadable line with the reason, never dropped:
the importer reports every line it could not use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shmstress.render.klog import split_event

__all__ = ["Entry", "Gap", "LogText", "Unreadable", "read_log"]

_HEADER = re.compile(
    r"(?:(?P<caller>[\w./-]+\.\w+):(?P<caller_line>[0-9]+): )?"
    r"(?P<level>[IWEF])(?P<month>[0-9]{2})(?P<day>[0-9]{2}) "
    r"(?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6})"
    r"(?: +(?P<thread>[0-9]+))?"
    r"(?: (?P<file>[\w./-]+):(?P<line>[0-9]+))?\]"
    r"(?: (?P<rest>.*))?$"
)
_LOGGER = re.compile(r"(?P<logger>[A-Za-z0-9_.\-/]+): ")
_GAPS = frozenset({"...", "…", "[...]", "(...)"})


@dataclass(frozen=True)
class Entry:
    """One log event: where it starts in the file, its thread (klog's pid/goroutine
    column; 0 when the layout has none), its message and fields (decoded as ``klog``
    decodes them)."""

    number: int
    text: str
    thread: int
    message: str
    fields: dict[str, object] = field(default_factory=dict)
    time: str = ""


@dataclass(frozen=True)
class Gap:
    """A ``...`` line: lines were left out here."""

    number: int


@dataclass(frozen=True)
class Unreadable:
    """A line that is no klog event, with why."""

    number: int
    text: str
    why: str


Item = Entry | Gap | Unreadable


@dataclass(frozen=True)
class LogText:
    items: tuple[Item, ...]

    @property
    def entries(self) -> tuple[Entry, ...]:
        return tuple(item for item in self.items if isinstance(item, Entry))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def read_log(text: str) -> LogText:
    """Every line of ``text`` as an entry (with its continuation lines), a gap or an
    unreadable line; blank lines end an entry and are otherwise ignored."""
    lines = text.splitlines()
    items: list[Item] = []
    header = ""  # the current entry's first line, its indentation removed ("": no entry)
    number = indent = 0
    more: list[str] = []

    def close() -> None:
        if header:
            items.append(_entry(number, header, more))

    for index, raw in enumerate(lines):
        stripped = raw.strip()
        rest = raw[indent:] if raw[:indent].isspace() or not indent else raw.lstrip()
        if _HEADER.match(raw.lstrip()):
            close()
            header, number, indent, more = raw.lstrip(), index + 1, _indent(raw), []
        elif stripped in _GAPS:
            close()
            header, more = "", []
            items.append(Gap(index + 1))
        elif not stripped:
            close()
            header, more = "", []
        elif header and rest[:1].isspace():  # indented under its header: a continuation
            more.append(rest)
        else:
            close()
            header, more = "", []
            items.append(Unreadable(index + 1, raw, "not a klog line"))
    close()
    return LogText(tuple(items))


def _entry(number: int, header: str, more: list[str]) -> Entry | Unreadable:
    match = _HEADER.match(header)
    assert match is not None
    rest = match["rest"] or ""
    if match["file"] is None:  # ktesting: a logger name may come first
        logger = _LOGGER.match(rest)
        if logger is not None:
            rest = rest[logger.end():]
    strip = min((len(line) - len(line.lstrip(" ")) for line in more), default=0)
    whole = "\n".join([rest, *(line[strip:] for line in more)])
    try:
        message, fields = split_event(whole)
    except ValueError:
        try:  # a multi-line value in a layout klog does not write: the first line alone
            message, fields = split_event(rest)
        except ValueError as exc:
            return Unreadable(number, header, str(exc))
    thread = int(match["thread"]) if match["thread"] else 0
    return Entry(number, "\n".join([header, *more]), thread, message, fields, match["time"])
