"""Report files are written whole or not at all: to a temporary file beside the target, renamed.

The reports import nothing of the engine (``shmstress.core.files`` does the same for it): a
chart, the page or a copied bundle cut short by a full disk must never sit under its final
name, where the page would show half a picture or a replay would read half a bundle.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def replaced(path: Path) -> Iterator[BinaryIO]:
    """A binary stream whose content replaces ``path`` once the block ends without error;
    on any error the temporary file goes and ``path`` is left as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            yield stream
            stream.flush()
            os.fchmod(stream.fileno(), 0o666 & ~_umask())
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text(path: Path, text: str) -> Path:
    with replaced(path) as stream:
        stream.write(text.encode("utf-8"))
    return path


def copy_file(source: Path, target: Path) -> Path:
    with replaced(target) as stream, open(source, "rb") as data:
        shutil.copyfileobj(data, stream)
    return target
