"""One-line errors for JSON that msgspec refused: the field's dotted path and what was wrong.

msgspec names a bad value inside a map by ``[...]``; the key is looked up here, so a
message reads ``field config.workers.clerk: Expected `int`, got `str```. Results records
and repro bundles both use it (this package imports nothing of the engine; the engine
may import it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

_AT = re.compile(r"^(?P<message>.*) - at `\$(?P<path>.*)`$", re.DOTALL)
_MISSING = re.compile(r"^Object missing required field `(?P<field>.+)`$")
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")


def describe_error(exc: msgspec.ValidationError, obj: object, kind: Any) -> str:
    """``field config.workers.<role>: Expected `int`, got `str``` from msgspec's message, the
    map key it writes as ``[...]`` looked up in ``obj``."""
    text = str(exc)
    found = _AT.match(text)
    message, path = (found["message"], found["path"]) if found else (text, "")
    path = _resolve_keys(path, obj, kind, text).lstrip(".")
    missing = _MISSING.match(message)
    if missing:
        field = f"{path}.{missing['field']}" if path else missing["field"]
        return f"missing required field {field}"
    return f"field {path}: {message}" if path else message


def _resolve_keys(path: str, obj: object, kind: Any, error: str) -> str:
    """Put in place of each ``[...]`` the key whose value fails: the first that, kept alone
    in its map, fails with the same error."""
    while "[...]" in path:
        head = path[: path.index("[...]")]
        mapping = _walk(obj, head)
        if not isinstance(mapping, dict):
            return path
        for key in mapping:
            trimmed = _replace(obj, _segments(head), {key: mapping[key]})
            try:
                msgspec.convert(trimmed, kind)
            except msgspec.ValidationError as exc:
                if str(exc) == error:  # msgspec's text, which still says [...]
                    path = path.replace("[...]", f".{key}", 1)
                    obj = trimmed
                    break
        else:
            return path
    return path


def _segments(path: str) -> list[str | int]:
    return [name if name else int(index) for name, index in _SEGMENT.findall(path)]


def _walk(obj: object, path: str) -> object:
    for segment in _segments(path):
        if isinstance(segment, int) and isinstance(obj, list) and segment < len(obj):
            obj = obj[segment]
        elif isinstance(segment, str) and isinstance(obj, dict):
            obj = obj.get(segment)
        else:
            return None
    return obj


def _replace(obj: object, segments: Sequence[str | int], value: object) -> object:
    """A copy of ``obj`` with the value at ``segments`` replaced (containers on the way copied)."""
    if not segments:
        return value
    first, rest = segments[0], segments[1:]
    if isinstance(obj, dict) and isinstance(first, str):
        return {**obj, first: _replace(obj.get(first), rest, value)}
    if isinstance(obj, list) and isinstance(first, int) and first < len(obj):
        copy = list(obj)
        copy[first] = _replace(copy[first], rest, value)
        return copy
    return obj
