"""Writing an output whole or not at all, and never over what is not a regular file.

A file is written to a temporary name beside its target and renamed (or, ``exclusive``,
hard-linked) into place: a full disk or a kill never leaves half of it under its name. A
device or a pipe (``target.locate`` says which) has no file to keep whole: it is written
in place, opened without ``O_CREAT`` or ``O_TRUNC`` and without following a link it did
not check, and a full device (``/dev/full``) is the full disk it stands for. Every failure
is an ``OSError``; the engine (``core.files``) and the reports word it for their users.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from shmstress.outputs.target import Kind, OutputRefusedError, Target, locate

_IN_PLACE_FLAGS = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC
"""A device or a pipe is opened as it is: never created, never truncated, and never made
the controlling terminal."""


def umask() -> int:
    """The process's umask, read without changing it (Linux shows it in /proc; elsewhere
    set and put back at once)."""
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
def written(path: Path, exclusive: bool = False) -> Iterator[BinaryIO]:
    """A binary stream whose bytes become ``path`` once the block ends without error.

    A new name or a regular file: renamed into place (a link to one: the file it leads
    to; the link stays). A device or a pipe: written in place. With ``exclusive``, the
    finished file is hard-linked into place instead, which fails (``FileExistsError``)
    when anything has the name: evidence already there is never replaced.
    """
    path = Path(path)
    target = Target(path, Kind.NEW) if exclusive else locate(path)
    if target.in_place:
        with _in_place(target) as stream:
            yield stream
    else:
        with _renamed(target.path, exclusive) as stream:
            yield stream


@contextlib.contextmanager
def _renamed(path: Path, exclusive: bool) -> Iterator[BinaryIO]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    renamed = False
    try:
        with os.fdopen(fd, "wb") as stream:
            yield stream
            stream.flush()
            os.fchmod(stream.fileno(), 0o666 & ~umask())  # as open() would have made it
            os.fsync(stream.fileno())
        if exclusive:
            os.link(temporary, path)
        else:
            os.replace(temporary, path)
            renamed = True
    finally:
        if not renamed:  # linked (the name has it now), or failed: the temporary goes
            with contextlib.suppress(OSError):
                os.unlink(temporary)


@contextlib.contextmanager
def _in_place(target: Target) -> Iterator[BinaryIO]:
    with os.fdopen(open_in_place(target), "wb") as stream:
        yield stream


def open_in_place(target: Target, flags: int = 0) -> int:
    """A descriptor open for writing on ``target`` (a device, a pipe, the command's own
    descriptor), checked to be what ``locate`` found; ``flags`` adds e.g. ``O_APPEND``."""
    if target.descriptor is not None:
        for stream in (sys.stdout, sys.stderr):  # what the command printed comes first
            stream.flush()
        return os.dup(target.descriptor)
    flags |= _IN_PLACE_FLAGS | (0 if target.follow else os.O_NOFOLLOW)
    if target.kind is Kind.PIPE:
        flags |= os.O_NONBLOCK  # a FIFO nobody reads: ENXIO now, rather than a wait forever
    try:
        fd = os.open(target.path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO and target.kind is Kind.PIPE:
            raise OutputRefusedError("it is a FIFO no process reads (start its reader "
                                     "first)") from None
        raise
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISCHR(mode) if target.kind is Kind.DEVICE else stat.S_ISFIFO(mode)):
        os.close(fd)  # replaced between the look and the open: write nothing
        raise OutputRefusedError(f"{target.path} changed while it was opened")
    os.set_blocking(fd, True)
    return fd


def append_whole(path: Path, data: bytes) -> None:
    """Append ``data`` with one ``O_APPEND`` write loop and ``fsync``; on a write error (a
    full disk) cut the file back to its size before, so no partial line is left for a
    reader to trip on. A device or a pipe takes the bytes as they come."""
    target = locate(Path(path))
    if target.in_place:
        fd = open_in_place(target, os.O_APPEND)
    else:
        target.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o644)
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if regular:
                os.fsync(fd)
        except OSError:
            if regular:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def probe_directory(directory: Path) -> None:
    """Raise the ``OSError`` creating a file in ``directory`` would meet (read-only,
    permissions), creating nothing that stays: an unnamed ``O_TMPFILE`` where the file
    system has them, else a temporary file removed at once (never over a name: mkstemp
    creates exclusively)."""
    try:
        os.close(os.open(directory, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600))
        return
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            raise  # not "no O_TMPFILE here": the directory's own answer
    fd, probe = tempfile.mkstemp(prefix=".shmstress-probe.", dir=directory)
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
