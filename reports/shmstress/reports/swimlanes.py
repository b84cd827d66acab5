"""The distinct failures' swimlane pictures: copied beside the page and inlined into it.

The engine draws each failure's swimlane when the campaign records it (an SVG file
beside the bundle, named in the results record): the reports read results only, never
the engine, so they cannot draw one. Here the picture is copied below index.html, like
the bundle, and its text inlined into the page: an inline SVG keeps its ``<title>``
tooltips (an ``<img>`` would drop them) and the page stays one self-contained file.

The file is read from a results directory a report may have been handed, so it is
inlined only if it is an SVG document with nothing that runs: no script, no foreign
HTML, no event attribute, no ``javascript:`` link. Otherwise the page says why it is
not shown.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from shmstress.reports.aggregate import FailureGroup
from shmstress.reports.bundles import target_of
from shmstress.reports.files import copy_file

SVG = "{http://www.w3.org/2000/svg}"
_ACTIVE = frozenset({"script", "foreignObject", "iframe", "object", "embed"})


@dataclass(frozen=True)
class Picture:
    """A failure's swimlane for the page: the copy's path, and its SVG text if safe to
    inline (else ``problem`` says why it is only linked)."""

    href: str
    svg: str | None
    problem: str | None = None


def inline_problem(text: str) -> str | None:
    """Why ``text`` must not be inlined into the page; None if it may."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        return f"not well-formed XML ({exc})"
    if root.tag != f"{SVG}svg":
        return f"not an SVG document (root {root.tag})"
    for element in root.iter():
        name = element.tag.rpartition("}")[2]
        if name in _ACTIVE:
            return f"it contains a <{name}> element"
        for attribute, value in element.attrib.items():
            local = attribute.rpartition("}")[2]
            if local.lower().startswith("on") or value.strip().lower().startswith(
                    "javascript:"):
                return f"it contains an active attribute ({local})"
    return None


def copy_swimlanes(failures: Sequence[FailureGroup], out_dir: Path) -> dict[FailureGroup, Picture]:
    """Each failure whose swimlane file exists -> its copy below ``out_dir``, inlinable."""
    pictures: dict[FailureGroup, Picture] = {}
    for group in failures:
        rep = group.representative
        source = rep.swimlane_file
        if source is None or rep.swimlane is None or not source.is_file():
            continue
        relative = target_of(rep.swimlane)
        target = out_dir / relative
        if not (target.exists() and target.samefile(source)):
            copy_file(source, target)  # whole or not at all
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            pictures[group] = Picture(relative.as_posix(), None, f"unreadable ({exc})")
            continue
        problem = inline_problem(text)
        # HTML puts an inline <svg> in the SVG namespace itself; without the declaration the
        # page names no URL at all.
        inline = text.replace(f' xmlns="{SVG[1:-1]}"', "", 1)
        pictures[group] = Picture(relative.as_posix(), None if problem else inline, problem)
    return pictures
