"""``fcntl.flock``, ``fcntl.lockf`` and ``fcntl.fcntl``'s ``F_SETLK``/``F_SETLKW``: file locks the
scheduler knows.

A file lock is a row of the object table found by its file (device, inode), one for
``flock`` and one for the record locks of ``lockf``/``fcntl`` (the OS keeps the two
apart too). Its exclusive holder is ``O_OWNER``, its shared holders a bit each
(``O_HOLDERS``): ``LOCK_SH`` is a readers-writer wait (``Wait.FILE_LOCK``). A lock
request is a point that parks until no other process holds it in a conflicting mode;
``LOCK_NB`` (``F_SETLK``) raises ``BlockingIOError`` at once instead, as the real call
does. ``LOCK_UN`` releases it; so does closing the file and the process's exit, which
are no points: ``waits.file_lock_holders`` asks the OS whether a holder still has it.

The real lock is taken too, always without blocking, once the board has granted it:

* a lock held by something outside the run (another program, a process left over from
  an earlier one) is then noticed and named (pid and command line, from
  ``/proc/locks``) instead of being silently ignored, and an execution that the real
  call would block fails with that one line rather than hanging;
* the OS then knows what the run holds, so closing a file releases its lock by the OS's
  own rules (``flock``: the open file's last descriptor; ``lockf``: any descriptor of
  the file in the process), and every real lock goes with its process at the end of the
  execution: nothing is left taken.

Approximations, said here once: a lock belongs to a process, as ``lockf``'s do; an
``flock`` belongs to an open file, so two processes locking one file they inherited open
from their parent exclude each other here, and not for real. ``lockf``'s byte ranges are
not told apart: two ranges of one file are one lock here. ``F_OFD_SETLK`` is passed
through as it is.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from collections.abc import Callable
from typing import Any

from shmstress.core.errors import PlainLimitError, UncontrolledError
from shmstress.plain.board import (
    HOLDER_BITS,
    HOST,
    NOBODY,
    O_DEVICE,
    O_HOLDERS,
    O_NAME,
    O_OWNER,
    O_STRIDE,
    Kind,
    Wait,
)
from shmstress.plain.runtime import PlainRuntime
from shmstress.plain.sync.identity import find_row, new_keyed_row, not_the_scenarios, note_site
from shmstress.plain.waits import file_lock_holders, holder_bit, os_holders

PLUMBING = True
_FLOCK = struct.Struct("hhll")  # struct flock's l_type, l_whence, l_start, l_len (Linux)


class FileLocks:
    """The patched ``fcntl`` functions of one runtime (``flock``, ``lockf``, ``fcntl``)."""

    def __init__(self, runtime: PlainRuntime) -> None:
        self._runtime = runtime
        self._flock = fcntl.flock
        self._lockf = fcntl.lockf
        self._fcntl: Callable[..., Any] = fcntl.fcntl

    def install(self) -> None:
        vars(fcntl).update(flock=self.flock, lockf=self.lockf, fcntl=self.fcntl)

    # -- what the code calls ----------------------------------------------------------------
    def flock(self, fd: Any, operation: int) -> None:
        if not_the_scenarios(1):
            return self._flock(fd, operation)

        def real(nonblocking: int) -> None:
            self._flock(fd, nonblocking)

        self._request(Kind.FILE_LOCK, fd, operation, real)

    def lockf(self, fd: Any, cmd: int, length: int = 0, start: int = 0,
              whence: int = 0) -> Any:
        if not_the_scenarios(1):
            return self._lockf(fd, cmd, length, start, whence)

        def real(nonblocking: int) -> None:
            self._lockf(fd, nonblocking, length, start, whence)

        self._request(Kind.RECORD_LOCK, fd, cmd, real)

    def fcntl(self, fd: Any, cmd: int, arg: Any = 0) -> Any:
        if (cmd not in (fcntl.F_SETLK, fcntl.F_SETLKW) or not isinstance(arg, bytes | bytearray)
                or not_the_scenarios(1)):
            return self._fcntl(fd, cmd, arg)
        kind = _FLOCK.unpack_from(arg)[0]
        operation = {fcntl.F_UNLCK: fcntl.LOCK_UN, fcntl.F_RDLCK: fcntl.LOCK_SH}.get(
            kind, fcntl.LOCK_EX) | (fcntl.LOCK_NB if cmd == fcntl.F_SETLK else 0)
        done: list[Any] = []

        def real(nonblocking: int) -> None:
            done.append(self._fcntl(fd, fcntl.F_SETLK, arg))

        self._request(Kind.RECORD_LOCK, fd, operation, real)
        return done[0] if done else arg

    # -- one request --------------------------------------------------------------------------
    def _request(self, kind: Kind, fd: Any, operation: int,
                 real: Callable[[int], None]) -> None:
        runtime = self._runtime
        obj, name = self._row(kind, fd)
        me = runtime.slot if runtime.scheduled else HOST
        if operation & fcntl.LOCK_UN:
            runtime.point(f"release {name}")
            self._drop(obj, me)
            real(fcntl.LOCK_UN)
            return
        exclusive = bool(operation & fcntl.LOCK_EX)
        block = not operation & fcntl.LOCK_NB
        if me >= HOLDER_BITS - 1 and me != HOST:
            raise PlainLimitError(f"shmstress tells apart the file locks of {HOLDER_BITS - 1} "
                                  "processes; the scenario started more")
        if kind == Kind.FILE_LOCK and self._mine(obj, me):
            self._drop(obj, me)  # flock converts a lock by dropping it first, as the OS does
        verb = ("acquire " if exclusive else "share ") if block else \
            ("try to acquire " if exclusive else "try to share ")
        if block:
            step = runtime.point(verb + name, Wait.FILE_LOCK, obj, arg=int(exclusive))
        else:
            step = runtime.point(verb + name)
        owner, shared = file_lock_holders(runtime.board, obj, me)
        if owner != NOBODY or (exclusive and shared):
            if block:  # only at import: the host holds it, nothing else runs
                raise RuntimeError(f"shmstress: {name} is held while the scenario's module is "
                                   "imported; a lock request there would wait forever")
            runtime.yielded = 1  # the caller will likely try again
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        try:
            real((fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except (BlockingIOError, PermissionError):
            raise UncontrolledError(self._outside(kind, fd, name)) from None
        fields = runtime.board.objects.mv
        base = obj * O_STRIDE
        bits = sum(holder_bit(holder) for holder in shared)
        fields[base + O_OWNER] = me if exclusive else NOBODY
        fields[base + O_HOLDERS] = bits if exclusive else bits | holder_bit(me)
        note_site(runtime, obj, step)
        if not exclusive:
            runtime.wake()  # a downgrade lets other readers in

    def _row(self, kind: Kind, fd: Any) -> tuple[int, str]:
        runtime = self._runtime
        number = fd if isinstance(fd, int) else fd.fileno()
        status = os.fstat(number)
        obj = find_row(runtime, (kind,), status.st_ino, status.st_dev)
        if obj == NOBODY:
            obj, _ = new_keyed_row(runtime, kind, "flock" if kind == Kind.FILE_LOCK else "lockf",
                                   status.st_ino)
            runtime.board.objects.mv[obj * O_STRIDE + O_DEVICE] = status.st_dev
        return obj, runtime.name_of(runtime.board.obj(obj, O_NAME))

    def _mine(self, obj: int, me: int) -> bool:
        board = self._runtime.board
        return board.obj(obj, O_OWNER) == me or bool(board.obj(obj, O_HOLDERS) & holder_bit(me))

    def _drop(self, obj: int, me: int) -> None:
        """``me`` holds ``obj`` no longer (whether it did or not, as ``LOCK_UN`` goes)."""
        board = self._runtime.board
        if not self._mine(obj, me):
            return
        if board.obj(obj, O_OWNER) == me:
            board.set_obj(obj, O_OWNER, NOBODY)
        board.set_obj(obj, O_HOLDERS, board.obj(obj, O_HOLDERS) & ~holder_bit(me))
        self._runtime.wake()

    def _outside(self, kind: Kind, fd: Any, name: str) -> str:
        """The one line for a lock the OS refused though nobody in the run holds it."""
        number = fd if isinstance(fd, int) else fd.fileno()
        try:
            path = os.readlink(f"/proc/self/fd/{number}")
        except OSError:
            path = name
        status = os.fstat(number)
        holders = [f"pid {pid} ({_command(pid)})"
                   for pid in sorted(os_holders(kind, status.st_dev, status.st_ino))]
        by = ", ".join(holders) or "a process shmstress cannot see"
        return (f"shmstress: the {'flock' if kind == Kind.FILE_LOCK else 'lockf'} on {path} is "
                f"held outside the run's control by {by}; the real call would block")


def path_of(pid: int, device: int, inode: int) -> str | None:
    """The path under which process ``pid`` has the file (device, inode) open, if it has:
    for a report, which names the file a process waits to lock."""
    folder = f"/proc/{pid}/fd"
    try:
        numbers = os.listdir(folder)
    except OSError:
        return None
    for number in numbers:
        try:
            status = os.stat(f"{folder}/{number}")
            if status.st_ino == inode and status.st_dev == device:
                return os.readlink(f"{folder}/{number}")
        except OSError:
            continue
    return None


def _command(pid: int) -> str:
    if pid == os.getpid():
        return "this very process, through another open file"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            words = cmdline.read().split(b"\0")
    except OSError:
        return "gone"
    return " ".join(word.decode(errors="replace") for word in words if word)[:120] or "?"
