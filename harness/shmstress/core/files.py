"""Artifacts are written whole or not at all: to a temporary file beside the target, renamed.

A bundle, a log or a JSON file cut short by a full disk or a kill must never sit under
its final name, where a reader would take it for the real thing. An append-only file
(``results.jsonl``) cannot be renamed into place line by line: ``append_whole`` writes a
line with one ``write`` and, if the disk fills up half-way, cuts the file back to where
it was.

Every output location is also probed before a run starts (``require_writable``): a
failing run must not discover after its work that it cannot keep what it found.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from shmstress.core.errors import ConfigError


class ArtifactError(ConfigError):
    """An artifact could not be written (full disk, permissions): nothing is left under its
    name. A command that found something reports this in one line and keeps its verdict."""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _umask() -> int:
    """The process's umask, read without changing it (Linux shows it in /proc)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
        raise ArtifactError(f"cannot write {name}: {_reason(exc)}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            yield stream
            stream.flush()
            os.fchmod(stream.fileno(), 0o666 & ~_umask())  # as open() would have made it
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise ArtifactError(f"cannot write {name}: {_reason(exc)}") from exc
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


def append_whole(path: Path, data: bytes, what: str = "") -> None:
    """Append ``data`` with ``O_APPEND`` and ``fsync``; on a write error (a full disk) cut
    the file back to its size before, so no partial line is left for a reader to trip on."""
    name = f"{what} {path}" if what else str(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ArtifactError(f"cannot append to {name}: {_reason(exc)}") from exc
    try:
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise ArtifactError(f"cannot append to {name}: {_reason(exc)}") from exc
    finally:
        os.close(fd)


def require_writable(path: Path, what: str, directory: bool = False) -> None:
    """Refuse, with one line, an output location that cannot be written: ``path`` a file
    (its directory must take a new file) or, with ``directory``, a directory (created later
    if missing). Probes the nearest existing directory by creating a file in it, so a
    read-only mount or a missing permission shows up before any worker starts; it creates
    nothing that stays."""
    path = Path(path)
    if directory:
        if path.exists() and not path.is_dir():
            raise ConfigError(f"cannot write {what} {path}: it exists and is not a directory")
        start = path
    else:
        if path.is_dir():
            raise ConfigError(f"cannot write {what} {path}: it is a directory")
        if path.exists() and not os.access(path, os.W_OK):
            raise ConfigError(f"cannot write {what} {path}: permission denied")
        start = path.parent
    existing = start.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"cannot write {what} {path}: {existing} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".shmstress-probe.", dir=existing)
    except OSError as exc:
        raise ConfigError(f"cannot write {what} {path}: {_reason(exc)} ({existing})") from exc
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
