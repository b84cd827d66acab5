"""What an output name holds, and so how it may be written: renamed over, written in place,
or refused.

Artifacts are written to a temporary file renamed over their name, so that no reader
ever sees half of one. Renamed over what is not a regular file, that destroys it: as
root, ``--json /dev/null`` replaced the machine's ``/dev/null`` with a 0644 file. So the
name is looked at first, never followed blindly:

- nothing, or a regular file: the rename (``Kind.NEW``, ``Kind.FILE``);
- a character device (``/dev/null``, ``/dev/full``, a terminal) or a pipe (``| jq``,
  ``>(jq .)``, a FIFO): written in place, as a shell's ``>`` would; there is no file
  to keep whole (``Kind.DEVICE``, ``Kind.PIPE``);
- ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``: the command's own
  descriptor, written through a duplicate, after what the command printed (as gawk
  does): opened again by name, a redirected stdout file would be written from its start
  over the command's own output (``Kind.DESCRIPTOR``);
- a symbolic link: resolved one link at a time, each one checked as the kernel's
  ``fs.protected_symlinks`` checks it (below), so a regular file it leads to is replaced
  and the link kept, and a device it leads to is written in place;
- refused, one line (``OutputRefusedError``): a directory; a block device (the bytes would land on
  a disk's own blocks: no output is meant to go there); a socket (``open`` cannot write
  one); a FIFO no process reads (waiting for a reader would hang a finished run; see
  ``writing``); and anything in a shared sticky directory (``/tmp``, ``/dev/shm``) that
  another user owns: a link, a FIFO or a file planted there under a name a root job is
  known to write is that user's, not an output (``fs.protected_symlinks``,
  ``protected_fifos`` and ``protected_regular`` refuse the same, when they are on).
"""

from __future__ import annotations

import enum
import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_LINKS = 40
"""Links followed in a row before giving up, as Linux's path walk does (ELOOP)."""

_DESCRIPTORS = {"/dev/stdout": 1, "/dev/stderr": 2}
_DESCRIPTOR_PATH = re.compile(r"/(?:dev/fd|proc/self/fd|proc/(\d+)/fd)/(\d+)")


class OutputRefusedError(OSError):
    """The name holds something no output may be written to or over; ``strerror`` says
    what, in words for one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EPERM, reason)


class Kind(enum.Enum):
    NEW = "nothing there yet"
    FILE = "a regular file"
    DEVICE = "a character device"
    PIPE = "a pipe"
    DESCRIPTOR = "the command's own descriptor"


@dataclass(frozen=True)
class Target:
    """Where an output's bytes go: ``path`` is the name given, or where its links lead."""

    path: Path
    kind: Kind
    descriptor: int | None = None  # Kind.DESCRIPTOR: the descriptor to duplicate
    follow: bool = False  # reached through a link only the kernel can follow (/proc/PID/fd)

    @property
    def in_place(self) -> bool:
        """Written through ``open`` (or the descriptor), never renamed over."""
        return self.kind in (Kind.DEVICE, Kind.PIPE, Kind.DESCRIPTOR)


def locate(path: Path) -> Target:
    """What writing ``path`` means; ``OutputRefusedError`` (an ``OSError``) when it must not be
    written, another ``OSError`` when the name cannot even be looked at (too long)."""
    given = path = Path(path)
    descriptor = own_descriptor(path)
    if descriptor is not None:
        return Target(path, Kind.DESCRIPTOR, descriptor)
    for _ in range(MAX_LINKS):
        try:
            found = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return Target(path, Kind.NEW)
        _refuse_untrusted(path, found)
        if not stat.S_ISLNK(found.st_mode):
            return Target(path, _kind(_named(path, given), found.st_mode))
        following = path.parent / os.readlink(path)
        try:
            final = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            final = None  # dangling: the name it gives is where the file will be
        if final is not None and not os.path.lexists(following):
            # a magic link (/proc/PID/fd/N -> pipe:[...]): its text is no name to walk
            return Target(path, _kind(_named(path, given), final.st_mode), follow=True)
        path = following
    raise OutputRefusedError(f"{path}: more than {MAX_LINKS} symbolic links in a row")


def own_descriptor(path: Path) -> int | None:
    """The descriptor of this process that ``path`` names (``/dev/stdout``,
    ``/dev/fd/1``, ``/proc/self/fd/1``), or None."""
    text = os.path.normpath(os.path.abspath(path))
    if text in _DESCRIPTORS:
        return _DESCRIPTORS[text]
    match = _DESCRIPTOR_PATH.fullmatch(text)
    if match is None or (match.group(1) is not None and int(match.group(1)) != os.getpid()):
        return None
    return int(match.group(2))


def _named(path: Path, given: Path) -> str:
    """How a reason names what it is about: "it" is the name given, a link's end its path."""
    return "it" if path == given else str(path)


def _kind(it: str, mode: int) -> Kind:
    if stat.S_ISREG(mode):
        return Kind.FILE
    if stat.S_ISCHR(mode):
        return Kind.DEVICE
    if stat.S_ISFIFO(mode):
        return Kind.PIPE
    if stat.S_ISDIR(mode):
        raise OutputRefusedError(f"{it} is a directory")
    if stat.S_ISBLK(mode):
        raise OutputRefusedError(f"{it} is a block device: an output written there would overwrite "
                      "the disk's own data")
    if stat.S_ISSOCK(mode):
        raise OutputRefusedError(f"{it} is a socket: it cannot be opened for writing")
    raise OutputRefusedError(f"{it} is not a file, a device or a pipe")


def _refuse_untrusted(path: Path, found: os.stat_result) -> None:
    """Refuse what another user put in a shared sticky directory (``/tmp``, ``/dev/shm``):
    only entries of ours or of the directory's owner are ours to follow or write."""
    directory = os.stat(path.parent)
    shared = (directory.st_mode & stat.S_ISVTX) and (directory.st_mode & stat.S_IWOTH)
    if shared and found.st_uid not in (os.geteuid(), directory.st_uid):
        what = ("a symbolic link" if stat.S_ISLNK(found.st_mode)
                else "a FIFO" if stat.S_ISFIFO(found.st_mode) else "a file")
        raise OutputRefusedError(f"{path} is {what} of uid {found.st_uid} in the shared directory "
                      f"{path.parent}: not followed or written by uid {os.geteuid()} "
                      "(name an output of your own)")
