"""POSIX named semaphores as ``posix_ipc`` makes them, kept on the board.

``posix_ipc.Semaphore(name, flags, mode, initial_value)`` is a row of the object table
found by its name (``identity``): every process that opens the name has its own handle
and all of them count down one value, ``O_COUNT``. ``acquire`` parks until the value is
above zero (``Wait.SEMAPHORE``, as a ``multiprocessing.Semaphore``), with a timeout of 0
it tries and raises ``BusyError``, as the real one does; the process that took it last
is its holder until a release, and where it took it is kept (``O_SITE``) for the report
of whoever waits. ``unlink`` forgets the name: handles open on it keep working, a new
one with ``O_CREAT`` makes another semaphore, as in the OS.

The OS never sees a semaphore of the run: it lives on the board, so one made in an
execution goes with it (the board is restored, as a segment is unlinked), and a run never
leaves one at 0 for the user's own program to hang on. A name the run did not make is
looked up in the OS once, when the run first opens it: the semaphore found there is
adopted at the value it has, read and never changed (so its real users are not
disturbed, and every execution starts from the same value).
"""

from __future__ import annotations

import secrets
from types import ModuleType, TracebackType
from typing import Any, ClassVar

from shmstress.plain.board import HOST, NOBODY, O_COUNT, O_KEY, O_NAME, O_OWNER, Kind, Wait
from shmstress.plain.runtime import PlainRuntime
from shmstress.plain.sync.identity import find_row, key_of, new_keyed_row, note_site

PLUMBING = True


class NamedSemaphore:
    """What ``posix_ipc.Semaphore`` makes in a run."""

    _runtime: ClassVar[PlainRuntime]
    _posix_ipc: ClassVar[ModuleType]  # the real module: its errors and flags
    _real: ClassVar[type]  # the real class, to look a name up in the OS

    def __init__(self, name: str | None, flags: int = 0, mode: int = 0o600,
                 initial_value: int = 0) -> None:
        ipc = self._posix_ipc
        create = bool(flags & ipc.O_CREAT)
        exclusive = create and bool(flags & ipc.O_EXCL)
        if name is None:
            if not exclusive:
                raise ipc.ExistentialError("A name is required unless O_CREX is set")
            name = f"/psem_{secrets.token_hex(8)}"
        if initial_value < 0:
            raise ValueError("The initial value must be a positive integer")
        runtime = self._runtime
        self.name = name
        self.mode = mode
        self._closed = False
        key = _key(name)
        runtime.point("open semaphore")  # not its name: one made up differs in a replay
        obj = find_row(runtime, (Kind.SEMAPHORE,), key)
        outside = None if obj != NOBODY else _in_the_os(self._real, name)
        if obj != NOBODY or outside is not None:
            if exclusive:
                raise ipc.ExistentialError("Semaphore already exists")
        elif not create:
            raise ipc.ExistentialError("No semaphore exists with the specified name")
        if obj == NOBODY:
            obj, _ = new_keyed_row(runtime, Kind.SEMAPHORE, "semaphore", key)
            runtime.board.set_obj(obj, O_COUNT, initial_value if outside is None else outside)
        self._obj = obj
        self._label = runtime.name_of(runtime.board.obj(obj, O_NAME))

    def acquire(self, timeout: float | None = None) -> None:
        runtime = self._runtime
        self._check()
        if timeout is not None and timeout <= 0:
            step = runtime.point(f"try to acquire {self._label}")
        else:
            step = runtime.point(f"acquire {self._label}", Wait.SEMAPHORE, self._obj,
                                 timeout=timeout)
        board = runtime.board
        count = board.obj(self._obj, O_COUNT)
        if count <= 0:
            if timeout is None:
                raise RuntimeError(f"shmstress: {self._label} is at zero while the scenario's "
                                   "module is imported; an acquire there would wait forever")
            runtime.yielded = 1
            raise self._posix_ipc.BusyError("Semaphore is busy")
        board.set_obj(self._obj, O_COUNT, count - 1)
        board.set_obj(self._obj, O_OWNER, runtime.slot if runtime.scheduled else HOST)
        note_site(runtime, self._obj, step)

    def release(self) -> None:
        runtime = self._runtime
        self._check()
        runtime.point(f"release {self._label}")
        board = runtime.board
        board.set_obj(self._obj, O_COUNT, board.obj(self._obj, O_COUNT) + 1)
        board.set_obj(self._obj, O_OWNER, NOBODY)
        runtime.wake()

    @property
    def value(self) -> int:
        runtime = self._runtime
        self._check()
        step = runtime.point(f"read the value of {self._label}")
        value = runtime.board.obj(self._obj, O_COUNT)
        runtime.note(step, value)
        return value

    def unlink(self) -> None:
        self._check()
        self.unlink_name(self.name, self._label)

    @classmethod
    def unlink_name(cls, name: str, label: str | None = None) -> None:
        """``posix_ipc.unlink_semaphore``: the name is forgotten; the semaphore lives on for
        the handles open on it. A name the run never opened is looked up in the OS (and
        adopted, so that it is gone for the rest of the execution, not for the OS)."""
        runtime = cls._runtime
        runtime.point(f"unlink {label or 'semaphore'}")
        key = _key(name)
        obj = find_row(runtime, (Kind.SEMAPHORE,), key)
        if obj == NOBODY:
            outside = _in_the_os(cls._real, name)
            if outside is None:
                raise cls._posix_ipc.ExistentialError(
                    "No semaphore exists with the specified name")
            obj, _ = new_keyed_row(runtime, Kind.SEMAPHORE, "semaphore", key)
            runtime.board.set_obj(obj, O_COUNT, outside)
        runtime.board.set_obj(obj, O_KEY, 0)

    def close(self) -> None:
        self._closed = True

    def _check(self) -> None:
        if self._closed:
            raise self._posix_ipc.ExistentialError("The semaphore has been closed")

    def __enter__(self) -> NamedSemaphore:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<shmstress posix_ipc.Semaphore {self.name!r} ({self._label})>"


def _key(name: str) -> int:
    return key_of("semaphore", name.lstrip("/"))


def _in_the_os(real: type, name: str) -> int | None:
    """The value of the OS's semaphore of that name, or None if there is none (or it
    cannot be read): opened, read, closed; never taken, never released."""
    try:
        found: Any = real(name)
    except Exception:  # ExistentialError, PermissionsError: not the run's to have
        return None
    try:
        return int(found.value)
    finally:
        found.close()


def bind(runtime: PlainRuntime, ipc: ModuleType) -> type[NamedSemaphore]:
    """``posix_ipc.Semaphore`` for one runtime (its ``unlink_name`` is ``unlink_semaphore``)."""
    return type("Semaphore", (NamedSemaphore,), {
        "_runtime": runtime, "_posix_ipc": ipc, "_real": ipc.Semaphore,
        "__module__": NamedSemaphore.__module__})
