"""The distinct failures' swimlane pictures: copied beside the page and shown as images.

The engine draws each failure's swimlane when the campaign records it (an SVG file
beside the bundle, named in the results record): the reports read results only, never
the engine, so they cannot draw one. Here the picture is copied below index.html, like
the bundle, and the page shows it with ``<img src>``: a browser runs no script of an SVG
loaded as an image and fetches nothing it names, whatever the file holds, so the page
needs no sanitizer at all. (Inlining it, for its ``<title>`` tooltips, needed one: an
``ElementTree`` check passed a processing instruction that the browser's HTML parser
reads as a comment ending at its first ``>``, and SVG is where HTML sanitizers break:
ammonia, which nh3 binds, fixed an SVG-animation XSS as late as 4.1.4,
GHSA-m6mh-2hw2-555x. The tooltips are one click away, in the picture opened by itself.)

Opened by itself, though, an SVG is a document that runs its scripts: so a file is copied
and linked only if it holds nothing but what the engine's renderer draws (``svg_problem``:
the SVG elements and attributes it writes, no processing instruction, comment, DTD or
foreign namespace); anything else is left out, with the reason on the page and in a
warning line.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from shmstress.reports.aggregate import FailureGroup
from shmstress.reports.bundles import Published, publish

SVG = "{http://www.w3.org/2000/svg}"
_ELEMENTS = frozenset({f"{SVG}{name}" for name in ("svg", "title", "g", "rect", "line", "text")})
"""What ``shmstress.render.swimlane.render_svg`` draws (its tests hold it to this list)."""
_ATTRIBUTES = frozenset({
    "width", "height", "viewBox", "role", "x", "y", "rx", "x1", "y1", "x2", "y2",
    "fill", "stroke", "stroke-width", "stroke-dasharray",
    "font-family", "font-size", "font-weight", "font-style", "text-anchor",
})
_LARGEST = 32 * 1024 * 1024
"""Bytes of SVG checked at most; the engine's largest swimlane is a small fraction."""


class _RefusedError(Exception):
    """Something ``svg_problem`` refuses, met while parsing."""


class _Builder(ET.TreeBuilder):
    """Refuses what the default builder drops unseen, wherever it is (before or after the
    root element too, which no tree would hold)."""

    def pi(self, target: str, text: str | None = None) -> ET.Element:
        raise _RefusedError("it contains a processing instruction")

    def comment(self, text: str | None) -> ET.Element:
        raise _RefusedError("it contains a comment")

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        # Raised before any entity the DTD declares can be expanded.
        raise _RefusedError("it has a document type declaration")


def svg_problem(data: bytes) -> str | None:
    """Why ``data`` is not a swimlane as the engine draws it; None if it is."""
    if len(data) > _LARGEST:
        return f"larger than {_LARGEST // (1024 * 1024)} MiB"
    parser = ET.XMLParser(target=_Builder())
    try:
        parser.feed(data)
        root = parser.close()
    except _RefusedError as exc:
        return str(exc)
    except ET.ParseError as exc:
        return f"not well-formed XML ({exc})"
    if root.tag != f"{SVG}svg":
        return f"not an SVG document (root {root.tag})"
    for element in root.iter():
        if element.tag not in _ELEMENTS:
            return f"it contains a <{element.tag}> element the swimlane never draws"
        for attribute in element.attrib:
            if attribute not in _ATTRIBUTES:
                return f"it contains an attribute {attribute!r} the swimlane never draws"
    return None


def _check(stream: BinaryIO) -> str | None:
    return svg_problem(stream.read(_LARGEST + 1))


def copy_swimlanes(failures: Sequence[FailureGroup], out_dir: Path,
                   warnings: list[str]) -> dict[FailureGroup, Published]:
    """Each failure whose record names a swimlane -> its copy below ``out_dir``, or why not."""
    published: dict[FailureGroup, Published] = {}
    for group in failures:
        rep = group.representative
        if rep.swimlane:
            published[group] = publish(rep, rep.swimlane, "swimlane", ".svg", out_dir,
                                       warnings, check=_check)
    return published
