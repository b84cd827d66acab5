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
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

from shmstress.core.errors import ConfigError


class ArtifactError(ConfigError):
    """An artifact could not be written (full disk, permissions): nothing is left under its
    name. A command that found something reports this in one line and keeps its verdict."""


class ArtifactExistsError(ArtifactError):
    """An exclusive write found its name taken: evidence already there is never replaced."""


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
def replaced_atomically(path: Path, what: str = "", exclusive: bool = False) -> Iterator[TextIO]:
    """A text stream whose content replaces ``path`` only once the block ends without error.

    ``what`` names the artifact in the one-line error raised when it cannot be written.
    With ``exclusive`` the finished file is hard-linked into place instead of renamed, which
    fails (``ArtifactExistsError``) when ``path`` exists: a failure's evidence (a bundle,
    its log) must never replace another run's, even one written between our check and ours.
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
        if exclusive:
            try:
                os.link(temporary, path)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
        else:
            os.replace(temporary, path)
    except FileExistsError as exc:
        raise ArtifactExistsError(f"cannot write {name}: it exists already") from exc
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise ArtifactError(f"cannot write {name}: {_reason(exc)}") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


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
