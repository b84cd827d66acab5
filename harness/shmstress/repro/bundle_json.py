"""A bundle's JSON, read strictly: a bundle comes from anywhere (a CI artifact, a colleague's
mail), so what the standard reader lets through silently is refused in one line.

``json.loads`` keeps the last of two equal keys in one object, so a bundle could show one
``"tracker"`` to a reader's eye (or to a tool that keeps the first) and load another: a key
twice in any object is refused. And it recurses once per level of nesting, so a deeply
nested document raises ``RecursionError``, a traceback: it is a ``BundleError`` here. Every
reader of a bundle file goes through this module: both formats, and ``shmstress log``'s look
for a log inside one.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from shmstress.core.errors import BundleError


def parse_json(text: str) -> object:
    """The JSON value of ``text``; a BundleError line (without the file's name) for invalid
    JSON, a key twice in one object, or nesting too deep to read."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise BundleError(f"invalid JSON at line {exc.lineno}, column {exc.colno} "
                          f"({exc.msg})") from None
    except RecursionError:
        raise BundleError("its JSON is nested too deeply to read") from None


def read_document(path: Path) -> object:
    """The JSON value of the bundle file at ``path``; one BundleError line naming it for a
    file that cannot be read, is not UTF-8 text or not strict JSON (``parse_json``)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BundleError(f"cannot read bundle {path}: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"{path} is not a repro bundle: not UTF-8 text (byte "
                          f"{exc.start}: {raw[exc.start:exc.start + 1]!r})") from None
    try:
        return parse_json(text)
    except BundleError as exc:
        raise BundleError(f"{path} is not a repro bundle: {exc}") from None


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """One JSON object, refused if it names a key twice (which one counts is the reader's
    choice, so the bundle would say two things)."""
    data = dict(pairs)
    if len(data) != len(pairs):
        twice = next(key for key, n in Counter(key for key, _ in pairs).items() if n > 1)
        raise BundleError(f"the key {twice!r} appears twice in one object")
    return data
