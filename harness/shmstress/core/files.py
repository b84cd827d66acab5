"""Artifacts are written whole or not at all, and never over what is not a regular file.

A bundle, a log or a JSON file cut short by a full disk or a kill must never sit under
its final name, where a reader would take it for the real thing: each is written to a
temporary file beside the target and renamed. What a name already holds decides first
(``shmstress.outputs``): a device (``/dev/null``) or a pipe is written in place, never
replaced by a file; a directory, a block device, a socket or another user's entry in a
shared directory is refused. An append-only file (``results.jsonl``) cannot be renamed
into place line by line: ``append_whole`` writes a line with one ``write`` and, if the
disk fills up half-way, cuts the file back to where it was.

Every output location is also probed before a run starts (``require_writable``): a
failing run must not discover after its work that it cannot keep what it found.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

from shmstress.core.errors import ConfigError
from shmstress.outputs import writing
from shmstress.outputs.target import Kind, locate


class ArtifactError(ConfigError):
    """An artifact could not be written (full disk, permissions): nothing is left under its
    name. A command that found something reports this in one line and keeps its verdict."""


class ArtifactExistsError(ArtifactError):
    """An exclusive write found its name taken: evidence already there is never replaced."""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


@contextlib.contextmanager
def replaced_atomically(path: Path, what: str = "", exclusive: bool = False) -> Iterator[TextIO]:
    """A text stream whose content replaces ``path`` only once the block ends without error
    (a device or a pipe at ``path`` is written in place: ``outputs.writing.written``).

    ``what`` names the artifact in the one-line error raised when it cannot be written.
    With ``exclusive`` the finished file is hard-linked into place instead of renamed, which
    fails (``ArtifactExistsError``) when ``path`` exists: a failure's evidence (a bundle,
    its log) must never replace another run's, even one written between our check and ours.
    """
    with _written(path, what, exclusive) as raw:
        stream = io.TextIOWrapper(raw, encoding="utf-8")
        try:
            yield stream
        finally:
            stream.detach()  # flushed into ``raw``, which ``written`` finishes or drops


@contextlib.contextmanager
def _written(path: Path, what: str, exclusive: bool) -> Iterator[BinaryIO]:
    """``outputs.writing.written``, its errors in one line naming ``what``."""
    name = f"{what} {path}" if what else str(path)
    try:
        with writing.written(Path(path), exclusive) as raw:
            yield raw
    except FileExistsError as exc:
        raise ArtifactExistsError(f"cannot write {name}: it exists already") from exc
    except OSError as exc:
        raise ArtifactError(f"cannot write {name}: {_reason(exc)}") from exc


def write_bytes_atomically(path: Path, data: bytes, what: str = "",
                           exclusive: bool = False) -> Path:
    """``write_text_atomically`` for bytes kept as they are (a file copied or extended
    whole, whatever it holds)."""
    with _written(path, what, exclusive) as raw:
        raw.write(data)
    return path


def write_text_atomically(
    path: Path, text: str | Iterable[str], what: str = "", exclusive: bool = False
) -> Path:
    """Write ``text`` (or its pieces, in order) to ``path`` as one whole file; with
    ``exclusive``, only if ``path`` does not exist (see ``replaced_atomically``)."""
    with replaced_atomically(path, what, exclusive) as stream:
        if isinstance(text, str):
            stream.write(text)
        else:
            stream.writelines(text)
    return path


FREE_NAME_TRIES = 1000
"""Numbered names tried for one new artifact before giving up (a directory gone mad)."""


def free_names(directory: Path, stem: str, suffix: str,
               companions: Sequence[str] = ()) -> Iterator[Path]:
    """``stem+suffix``, then ``stem-2+suffix``, ``stem-3+suffix``...: each name under which
    neither the file nor a companion (the same stem with each suffix of ``companions``, e.g.
    a bundle's ``.log``) exists yet. The caller writes exclusively and takes the next name
    when another writer got there first, so two runs never share a name."""
    for n in range(1, FREE_NAME_TRIES + 1):
        candidate = stem if n == 1 else f"{stem}-{n}"
        taken = [directory / f"{candidate}{end}" for end in (suffix, *companions)]
        if not any(os.path.lexists(path) for path in taken):
            yield directory / f"{candidate}{suffix}"
    raise ArtifactError(f"cannot write {directory / (stem + suffix)}: "
                        f"{FREE_NAME_TRIES} names taken")


def write_text_new(directory: Path, stem: str, suffix: str, text: str | Iterable[str],
                   what: str = "", companions: Sequence[str] = ()) -> Path:
    """Write ``text`` whole under the first free name of ``free_names``; never replaces a
    file. Returns the path written."""
    pieces = text if isinstance(text, str) else list(text)
    for path in free_names(directory, stem, suffix, companions):
        try:
            return write_text_atomically(path, pieces, what, exclusive=True)
        except ArtifactExistsError:
            continue  # another writer took it between our look and our link
    raise AssertionError("free_names ends by raising")


def append_whole(path: Path, data: bytes, what: str = "") -> None:
    """Append ``data`` with ``O_APPEND`` and ``fsync``; on a write error (a full disk) cut
    the file back to its size before, so no partial line is left for a reader to trip on."""
    try:
        writing.append_whole(Path(path), data)
    except OSError as exc:
        name = f"{what} {path}" if what else str(path)
        raise ArtifactError(f"cannot append to {name}: {_reason(exc)}") from exc


def require_writable(path: Path, what: str, directory: bool = False) -> None:
    """Refuse, with one line, an output location that cannot be written: ``path`` a file
    (its directory must take a new file; a device or a pipe is taken as it is) or, with
    ``directory``, a directory (created later if missing). Probes the nearest existing
    directory by creating an unnamed file in it, so a read-only mount or a missing
    permission shows up before any worker starts; it creates and replaces nothing."""
    path = Path(path)
    try:
        if directory:
            if path.exists() and not path.is_dir():
                raise ConfigError(f"cannot write {what} {path}: it exists and is not a "
                                  "directory")
            start = path
        else:
            target = locate(path)
            if target.descriptor is not None:
                os.fstat(target.descriptor)  # open at all (EBADF: /dev/fd/9 of nothing)
                return
            if target.in_place:  # a device or a pipe: nothing is created beside it
                if not os.access(target.path, os.W_OK):
                    raise ConfigError(f"cannot write {what} {path}: permission denied")
                return
            if target.kind is Kind.FILE and not os.access(target.path, os.W_OK):
                raise ConfigError(f"cannot write {what} {path}: permission denied")
            start = target.path.parent
        existing = start.absolute()
        while not existing.exists():
            existing = existing.parent
    except OSError as exc:  # a name too long, a link refused
        raise ConfigError(f"cannot write {what} {path}: {_reason(exc)}") from exc
    if not existing.is_dir():
        raise ConfigError(f"cannot write {what} {path}: {existing} is not a directory")
    try:
        writing.probe_directory(existing)
    except OSError as exc:
        raise ConfigError(f"cannot write {what} {path}: {_reason(exc)} ({existing})") from exc
