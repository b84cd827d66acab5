"""Artifacts are written whole or not at all: to a temporary file beside the target, renamed.

A bundle, a log or a JSON file cut short by a full disk or a kill must never sit under
its final name, where a reader would take it for the real thing.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from shmstress.core.errors import ConfigError


@contextlib.contextmanager
def replaced_atomically(path: Path, what: str = "") -> Iterator[TextIO]:
    """A text stream whose content replaces ``path`` only once the block ends without error.

    ``what`` names the artifact in the one-line error raised when it cannot be written.
    """
    name = f"{what} {path}" if what else str(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise ConfigError(f"cannot write {name}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise ConfigError(f"cannot write {name}: {exc.strerror or exc}") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text_atomically(path: Path, text: str | Iterable[str], what: str = "") -> Path:
    """Write ``text`` (or its pieces, in order) to ``path`` as one whole file."""
    with replaced_atomically(path, what) as stream:
        if isinstance(text, str):
            stream.write(text)
        else:
            stream.writelines(text)
    return path
