"""Klog text lines for harness events, and a parser for them.

Failure reports quote events in the layout Kubernetes developers already read in ktesting
output, so a race found here can be compared line by line with one found in a real scheduler
log. The parser exists so that tests and report tooling can check rendered logs by value
instead of by fragile substring matching.

Layout of one event (the ktesting header with the worker pid added)::

    <file>:<line>: <L><mmdd> <hh:mm:ss.uuuuuu> <pid>] <logger>: <message> <key>=<value> ...

Pid column: one separating space, then the pid right-aligned in ``PID_WIDTH`` (7) characters,
(three spaces before a five-digit pid; 7 digits hold Linux's
largest pid). The commit message the style comes from shows wider padding, an artefact of its
indentation and not of klog. A pid longer than the width widens the column but keeps the
separating space, so the header still parses.

Everything here is a pure function of its arguments (apart from the local time zone, which can
be overridden), because rendering happens after the run from records copied out of shared
memory and must give the same text every time it is asked.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo

from shmstress.plugin.words import Raw

__all__ = [
    "LEVELS",
    "PID_WIDTH",
    "KlogEvent",
    "KlogFormatter",
    "ParsedLine",
    "Raw",
    "format_event",
    "format_value",
    "go_quote",
    "level_for",
    "parse_line",
    "split_event",
]

PID_WIDTH = 7
"""Width the pid is right-aligned in, after one separating space (see the module docstring)."""

LEVELS = ("I", "W", "E")
"""Severity letters klog uses for info, warning and error."""

_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_FIELD_START_RE = re.compile(r" ([A-Za-z_][A-Za-z0-9_.]*)=")
_NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_HEADER_RE = re.compile(
    r"(?P<file>[^\n]*?):(?P<line>[0-9]+): "
    r"(?P<level>[IWE])(?P<month>[0-9]{2})(?P<day>[0-9]{2}) "
    r"(?P<hh>[0-9]{2}):(?P<mm>[0-9]{2}):(?P<ss>[0-9]{2})\.(?P<micro>[0-9]{6})"
    r" +(?P<pid>[0-9]+)\] "
    r"(?P<logger>[^\n]*?): "
)
_HEX_RE = {
    "x": re.compile(r"[0-9a-fA-F]{2}"),
    "u": re.compile(r"[0-9a-fA-F]{4}"),
    "U": re.compile(r"[0-9a-fA-F]{8}"),
}
_OCTAL_RE = re.compile(r"[0-7]{3}")

# Escapes strconv.Quote writes with a letter instead of a code.
_QUOTE_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}
_UNQUOTE_ESCAPES = {letter[1]: char for char, letter in _QUOTE_ESCAPES.items()}

# Words that are values on their own; the non-finite spellings are the ones Go's %v prints,
# since JSON has none.
_WORDS: tuple[tuple[str, object], ...] = (
    ("true", True),
    ("false", False),
    ("null", None),
    ("NaN", math.nan),
    ("+Inf", math.inf),
    ("-Inf", -math.inf),
)

_JSON_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class KlogEvent:
    """One event as reports show it; ``time`` is epoch seconds or a datetime.

    Field keys are checked here, at construction, because a key the parser cannot recognise
    would otherwise only show up later as a report that silently parses into the wrong fields.
    """

    file: str
    line: int
    level: str
    time: float | datetime
    pid: int
    logger: str
    message: str
    fields: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"klog level must be one of {LEVELS}, not {self.level!r}")
        for key, _ in self.fields:
            if not _KEY_RE.fullmatch(key):
                raise ValueError(f"klog field key {key!r} does not match {_KEY_RE.pattern}")


@dataclass(frozen=True)
class ParsedLine:
    """A rendered event taken apart again.

    The header keeps only what the text holds: there is no year or time zone in a klog line,
    so the time comes back as its printed components rather than as an instant.
    """

    file: str
    line: int
    level: str
    month: int
    day: int
    hh: int
    mm: int
    ss: int
    micro: int
    pid: int
    logger: str
    message: str
    fields: dict[str, object]


def _is_print(char: str) -> bool:
    """Mirror Go's unicode.IsPrint so quoted values match what klog would print.

    Go keeps letters, marks, numbers, punctuation, symbols and the ASCII space. Python's
    tables may be of a different Unicode version than a given Go release, so characters
    assigned in only one of them can be escaped differently.
    """
    return char == " " or unicodedata.category(char)[0] in "LMNPS"


def go_quote(text: str) -> str:
    """Quote like Go's strconv.Quote, which klog uses for single-line string values.

    Matching Go byte for byte keeps our reports diffable against real Kubernetes logs.
    Python strings can hold lone surrogates, which Go strings cannot; they are written as
    ``\\uXXXX`` so that they survive a round trip instead of being replaced.
    """
    out = ['"']
    for char in text:
        escape = _QUOTE_ESCAPES.get(char)
        if escape is not None:
            out.append(escape)
        elif _is_print(char):
            out.append(char)
        else:
            code = ord(char)
            if code < 0x20 or code == 0x7F:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _block(text: str) -> str:
    """Render a multi-line value the way klog does, but without losing a final line break.

    klog prints a string ending in a line break exactly like the same string without it.
    Writing one tab-prefixed line per element of ``split("\\n")`` gives Go's output for
    every string that does not end in a line break, and an extra tab-only line for one that
    does, so the parser can restore the string exactly.
    """
    return "<\n" + "".join(f"\t{line}\n" for line in text.split("\n")) + " >"


def _escape_json_nonprint(text: str) -> str:
    """Keep invisible characters out of a one-line JSON value.

    ``json.dumps`` already escapes control characters below 0x20; any other character that
    is not printable can only sit inside a JSON string, where a ``\\u`` escape means the same.
    """
    if all(_is_print(char) for char in text):
        return text
    out: list[str] = []
    for char in text:
        code = ord(char)
        if _is_print(char):
            out.append(char)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
    return "".join(out)


def _format_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    # repr, not "%g": it keeps ".0" so the value parses back as a float, and it is valid JSON.
    return float.__repr__(value)


def format_value(value: object) -> str:
    """Render one field value as klog's text format would.

    Strings are quoted so that spaces and ``=`` inside them cannot be mistaken for the next
    field; strings with a line break use the multi-line layout because a quoted ``\\n`` makes
    tracebacks and pretty-printed JSON unreadable. Dicts, lists and tuples become compact JSON
    (klog shows structured values as JSON) so they stay on one line. Anything else is shown
    through ``str()`` as a string, which is what klog does for values with a String method.
    """
    if isinstance(value, Raw):
        return _block(value.text) if "\n" in value.text else value.text
    if isinstance(value, str):
        return _block(value) if "\n" in value else go_quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # int.__repr__ rather than str(): IntEnum and friends must print as numbers.
        return int.__repr__(value)
    if isinstance(value, float):
        return _format_float(value)
    if isinstance(value, dict | list | tuple):
        try:
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            # Keys JSON cannot hold, or a cycle: still show something rather than fail a report.
            return go_quote(str(value))
        return _escape_json_nonprint(text)
    return format_value(str(value))


def _wall_time(when: float | datetime, tz: tzinfo | None) -> datetime:
    """Turn an event time into the wall-clock time to print.

    A naive datetime is taken to be local wall time already; ``tz=None`` means local time.
    """
    if isinstance(when, datetime):
        if when.tzinfo is None and tz is None:
            return when
        return when.astimezone(tz)
    return datetime.fromtimestamp(when, tz)


def _one_line(text: str) -> str:
    """Keep header parts and the message on the first line, where the parser looks for them.

    This is the one lossy step: a line break in a message comes back as backslash-n.
    """
    return text.replace("\n", "\\n")


def format_event(event: KlogEvent, tz: tzinfo | None = None) -> str:
    """Render an event; the result has no trailing newline but may span lines.

    ``tz`` exists so that golden tests and reports made on another machine can pin the
    time zone; by default the local one is used, as klog does.
    """
    wall = _wall_time(event.time, tz)
    head = (
        f"{_one_line(event.file)}:{event.line}: "
        f"{event.level}{wall.month:02d}{wall.day:02d} "
        f"{wall.hour:02d}:{wall.minute:02d}:{wall.second:02d}.{wall.microsecond:06d} "
        f"{event.pid:>{PID_WIDTH}d}] "
        f"{_one_line(event.logger)}: {_one_line(event.message)}"
    )
    return head + "".join(f" {key}={format_value(value)}" for key, value in event.fields)


def _unquote_at(text: str, pos: int) -> tuple[str, int] | None:
    """Decode the Go-quoted string starting at ``text[pos]``; None if it is not one.

    ``\\xHH`` gives the character with that code (Go would give a byte); the formatter only
    writes it for ASCII, where the two agree.
    """
    out: list[str] = []
    i = pos + 1
    end = len(text)
    while i < end:
        char = text[i]
        if char == '"':
            return "".join(out), i + 1
        if char == "\n":
            return None
        if char != "\\":
            out.append(char)
            i += 1
            continue
        if i + 1 >= end:
            return None
        kind = text[i + 1]
        if kind in _UNQUOTE_ESCAPES:
            out.append(_UNQUOTE_ESCAPES[kind])
            i += 2
        elif kind in _HEX_RE:
            match = _HEX_RE[kind].match(text, i + 2)
            if match is None:
                return None
            code = int(match.group(), 16)
            if code > 0x10FFFF:
                return None
            out.append(chr(code))
            i = match.end()
        elif kind in "01234567":
            match = _OCTAL_RE.match(text, i + 1)
            if match is None or int(match.group(), 8) > 0xFF:
                return None
            out.append(chr(int(match.group(), 8)))
            i = match.end()
        else:
            return None
    return None


class _FieldParser:
    """Splits the text after ``<logger>: `` into message and fields, backtracking if needed.

    A field is `` key=value``. The value forms are tried in this order: a Go-quoted string, a
    multi-line block, JSON object or array, true/false/null/NaN/+Inf/-Inf, a JSON number; a
    typed value counts only if the text after it is the end or a valid run of fields. Failing
    that the value is Raw, ending at the earliest `` key=`` after which the rest is valid (or
    at the end of the text). Results are memoised per position, so the backtracking costs at
    most quadratic time in the length of one event.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._memo: dict[int, list[tuple[str, object]] | None] = {}

    def split_message(self, start: int) -> tuple[int, list[tuple[str, object]]]:
        """Find where the message ends: at the first `` key=`` that starts valid fields."""
        text = self._text
        line_end = text.find("\n", start)
        if line_end == -1:
            line_end = len(text)
        for candidate in _FIELD_START_RE.finditer(text, start, line_end):
            fields = self.fields_at(candidate.start())
            if fields is not None:
                return candidate.start(), fields
        if line_end != len(text):
            raise ValueError("klog line continues on another line without a multi-line value")
        return len(text), []

    def fields_at(self, pos: int) -> list[tuple[str, object]] | None:
        if pos == len(self._text):
            return []
        if pos not in self._memo:
            self._memo[pos] = self._field_at(pos)
        return self._memo[pos]

    def _field_at(self, pos: int) -> list[tuple[str, object]] | None:
        text = self._text
        start_match = _FIELD_START_RE.match(text, pos)
        if start_match is None:
            return None
        key = start_match.group(1)
        start = start_match.end()
        typed = self._typed_value(start)
        if typed is not None:
            value, end = typed
            rest = self.fields_at(end)
            if rest is not None:
                return [(key, value), *rest]
        line_end = text.find("\n", start)
        if line_end == -1:
            line_end = len(text)
        for candidate in _FIELD_START_RE.finditer(text, start, line_end):
            rest = self.fields_at(candidate.start())
            if rest is not None:
                return [(key, Raw(text[start : candidate.start()])), *rest]
        if line_end == len(text):
            return [(key, Raw(text[start:]))]
        return None

    def _typed_value(self, pos: int) -> tuple[object, int] | None:
        text = self._text
        if pos >= len(text):
            return None
        first = text[pos]
        if first == '"':
            return _unquote_at(text, pos)
        if text.startswith("<\n", pos):
            return self._block_at(pos + 2)
        if first in "{[":
            try:
                decoded, end = _JSON_DECODER.raw_decode(text, pos)
            except ValueError:
                return None
            return decoded, end
        for word, word_value in _WORDS:
            if text.startswith(word, pos):
                return word_value, pos + len(word)
        number = _NUMBER_RE.match(text, pos)
        if number is None:
            return None
        is_float = number.group(1) is not None or number.group(2) is not None
        parsed: object = float(number.group()) if is_float else int(number.group())
        return parsed, number.end()

    def _block_at(self, pos: int) -> tuple[str, int] | None:
        text = self._text
        lines: list[str] = []
        while True:
            if text.startswith(" >", pos):
                return "\n".join(lines), pos + 2
            if pos >= len(text) or text[pos] != "\t":
                return None
            newline = text.find("\n", pos)
            if newline == -1:
                return None
            lines.append(text[pos + 1 : newline])
            pos = newline + 1


def parse_line(text: str) -> ParsedLine:
    """Take apart one event as rendered by ``format_event`` (a single trailing newline is ok).

    Ambiguity rule: the message ends at the first `` key=`` (key matching
    ``[A-Za-z_][A-Za-z0-9_.]*``) after which the rest of the event is a valid run of fields.
    Because a Raw value accepts almost anything, a message that itself contains `` key=`` is
    cut there; messages are not escaped, so such messages do not round-trip. Likewise the
    logger name ends at the first ``": "``. Field values come back decoded: strings unquoted
    and re-joined from multi-line blocks, JSON decoded, unrecognised text as ``Raw``. A repeated
    key keeps its last value. Raises ValueError for text that is not a klog line.
    """
    text = text.removesuffix("\n")
    header = _HEADER_RE.match(text)
    if header is None:
        raise ValueError(f"not a klog line: {text[:120]!r}")
    start = header.end()
    message_end, fields = _FieldParser(text).split_message(start)
    return ParsedLine(
        file=header["file"],
        line=int(header["line"]),
        level=header["level"],
        month=int(header["month"]),
        day=int(header["day"]),
        hh=int(header["hh"]),
        mm=int(header["mm"]),
        ss=int(header["ss"]),
        micro=int(header["micro"]),
        pid=int(header["pid"]),
        logger=header["logger"],
        message=text[start:message_end],
        fields=dict(fields),
    )


def split_event(text: str) -> tuple[str, dict[str, object]]:
    """The message and fields of the text after a header, by ``parse_line``'s rules; a
    message klog quoted (its structured text format: ``"msg" key=value``) comes back
    unquoted. For logs written by other programs (``klog_reading``)."""
    if text.startswith('"'):
        quoted = _unquote_at(text, 0)
        if quoted is not None:
            message, end = quoted
            rest = _FieldParser(text).fields_at(end)
            if rest is not None:
                return message, dict(rest)
    message_end, fields = _FieldParser(text).split_message(0)
    return text[:message_end], dict(fields)


def level_for(levelno: int) -> str:
    """Map a logging level number to klog's letter; klog has no debug or critical letters."""
    if levelno >= logging.ERROR:
        return "E"
    if levelno >= logging.WARNING:
        return "W"
    return "I"


def _safe_key(key: object) -> str:
    """Make a key from ``extra={"kv": ...}`` renderable instead of failing inside logging."""
    text = re.sub(r"[^A-Za-z0-9_.]", "_", str(key))
    return text if _KEY_RE.fullmatch(text) else f"_{text}"


class KlogFormatter(logging.Formatter):
    """Lets code that logs through the standard library produce the same lines as events.

    Fields come from ``extra={"kv": {...}}``. An exception or stack attached to the record is
    added as a multi-line ``err`` or ``stack`` field, since klog has no trailer after the line.
    """

    def __init__(self, tz: tzinfo | None = None) -> None:
        super().__init__()
        self._tz = tz

    def format(self, record: logging.LogRecord) -> str:
        fields: list[tuple[str, object]] = []
        kv = record.__dict__.get("kv")
        if isinstance(kv, Mapping):
            fields.extend((_safe_key(key), value) for key, value in kv.items())
        elif kv is not None:
            fields.append(("kv", kv))
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            fields.append(("err", record.exc_text))
        if record.stack_info:
            fields.append(("stack", self.formatStack(record.stack_info)))
        event = KlogEvent(
            file=os.path.basename(record.pathname),
            line=record.lineno,
            level=level_for(record.levelno),
            time=record.created,
            pid=record.process or 0,
            logger=record.name,
            message=record.getMessage(),
            fields=tuple(fields),
        )
        return format_event(event, self._tz)
