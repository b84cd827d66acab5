"""Report files are written whole or not at all: to a temporary file beside the target, renamed.

A chart, the page or a copied bundle cut short by a full disk must never sit under its
final name, where the page would show half a picture or a replay would read half a
bundle; and no report file is renamed over a device or through another user's link.
The engine writes its artifacts the same way: both go through ``shmstress.outputs``,
which is no part of the engine.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from shmstress.outputs.writing import written as replaced

__all__ = ["copy_file", "replaced", "write_text"]


def write_text(path: Path, text: str) -> Path:
    with replaced(path) as stream:
        stream.write(text.encode("utf-8"))
    return path


def copy_file(source: Path, target: Path) -> Path:
    with replaced(target) as stream, open(source, "rb") as data:
        shutil.copyfileobj(data, stream)
    return target
