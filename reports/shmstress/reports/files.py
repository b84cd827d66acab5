"""Report files are written whole or not at all, and files a record names are read only
from below the results file's directory.

Writing: to a temporary file beside the target, renamed. The reports import nothing of the
engine (``shmstress.core.files`` does the same for it): a chart, the page or a copied
bundle cut short by a full disk must never sit under its final name, where the page would
show half a picture or a replay would read half a bundle.

Reading: a results file is data of unknown origin (downloaded from CI, handed over on a
share), and a report is published. A path a record names is read only if it lies below
the directory of its results file: relative, without ``..``, every directory on the way
and the file itself opened without following a symlink (a hard ``openat`` walk, since
Python has no ``openat2(RESOLVE_BENEATH)``), a regular file owned by whoever owns the
results file. Anything else is refused with the reason, never copied: a root ``report``
over a planted record must not publish ``/etc/shadow``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO


class RefusedFileError(ValueError):
    """A path a results record names that the report will not read (the message says why)."""


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


def write_bytes(path: Path, data: bytes) -> Path:
    with replaced(path) as stream:
        stream.write(data)
    return path


def beneath(recorded: str) -> PurePosixPath:
    """``recorded`` as a path below the results directory, or ``RefusedFileError``: it is
    absolute, climbs out with ``..``, or names the directory itself."""
    path = PurePosixPath(recorded)
    if "\0" in recorded or path.is_absolute() or ".." in path.parts or not path.parts:
        raise RefusedFileError("not a path inside the results directory")
    return path


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO must not block


def _refusal(exc: OSError, name: str) -> OSError | RefusedFileError:
    """ELOOP/ENOTDIR from an ``O_NOFOLLOW`` open: the name is a symlink (or not a directory);
    anything else (a missing file above all) stays an OSError."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return RefusedFileError(f"{name} is a symlink or not a directory")
    return exc


@contextlib.contextmanager
def opened_beneath(results: Path, recorded: str) -> Iterator[BinaryIO]:
    """The file ``recorded`` names, relative to the directory of ``results``, open for
    reading; ``RefusedFileError`` if it is not a regular file below that directory owned by the
    results file's owner; ``FileNotFoundError`` if it is not there."""
    relative = beneath(recorded)
    owner = os.stat(results).st_uid
    *directories, name = relative.parts
    fd = os.open(results.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in directories:
            try:
                inner = os.open(part, _DIRECTORY, dir_fd=fd)
            except OSError as exc:
                raise _refusal(exc, part) from None
            os.close(fd)
            fd = inner
        try:
            inner = os.open(name, _FILE, dir_fd=fd)
        except OSError as exc:
            raise _refusal(exc, name) from None
    finally:
        os.close(fd)
    with os.fdopen(inner, "rb") as stream:
        found = os.fstat(stream.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise RefusedFileError("not a regular file")
        if found.st_uid != owner:
            # A hard link to another user's file (fs.protected_hardlinks=0) is a regular
            # file below the directory too; its owner gives it away.
            raise RefusedFileError(f"owned by uid {found.st_uid}, not by the results file's owner")
        os.set_blocking(stream.fileno(), True)
        yield stream


def same_file(stream: BinaryIO, target: Path) -> bool:
    """``target`` is the very file ``stream`` reads (a report written into the campaign
    directory itself): copying it onto itself would only change its inode."""
    try:
        there = os.stat(target, follow_symlinks=False)
    except OSError:
        return False
    here = os.fstat(stream.fileno())
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def copy_stream(stream: BinaryIO, target: Path) -> Path:
    with replaced(target) as out:
        shutil.copyfileobj(stream, out)
    return target
