"""Where an arena's semaphores come from: forked, or named so a fresh interpreter can open them.

A process forked from the one that made a semaphore inherits it; that is how
workers get theirs, and multiprocessing's fork context unlinks each semaphore's
name at once. A process started afresh (the plain-code host, a new interpreter
so that its own forks copy few page tables) inherits no mapping, so the
semaphores it shares are made under names, opened by those names in the same
order, and then unlinked: from then on they live as long as a process maps
them, as the forked ones do. A name left by a coordinator killed in between is
the sweeper's (``shm.sweep_stale_segments``). No resource tracker process is
started (multiprocessing's spawn context would start one per coordinator).
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
from collections.abc import Sequence
from multiprocessing.synchronize import Lock as MpLock
from multiprocessing.synchronize import Semaphore as MpSemaphore
from typing import Any, Protocol, TypeVar

from shmstress.core.unguessable import create_unguessable

_MP: Any = importlib.import_module("_multiprocessing")  # SemLock, sem_unlink
_SEMAPHORE = 1  # multiprocessing.synchronize.SEMAPHORE, the kind of Lock and Semaphore both
SEMAPHORE_PREFIX = "shmstress-"
"""``/dev/shm/sem.shmstress-<pid>-<start>-sem-<token>-<n>``: the owner's pid and start time,
as in segment names, so a sweeper finds those of a coordinator that is gone; ``<token>`` is
fresh for each semaphore (``core.unguessable``), so no one can take the next name first."""
_T = TypeVar("_T", MpLock, MpSemaphore)
_FORK = multiprocessing.get_context("fork")


class Semaphores(Protocol):
    """Makes the semaphores of an arena, in the order its users ask for them."""

    def semaphore(self) -> MpSemaphore:
        """A semaphore whose value starts at zero."""

    def lock(self) -> MpLock: ...

    def unlink(self) -> None:
        """Remove the names (no process can open them afterwards; those open stay)."""


class ForkSemaphores:
    """Unnamed semaphores: only processes forked from here on share them."""

    def semaphore(self) -> MpSemaphore:
        return _FORK.Semaphore(0)

    def lock(self) -> MpLock:
        return _FORK.Lock()

    def unlink(self) -> None:
        """Nothing has a name."""


class NamedSemaphores:
    """Semaphores under names of their own (``names``, in the order they were made)."""

    def __init__(self, owner_pid: int, owner_started: int | None) -> None:
        self._prefix = f"/{SEMAPHORE_PREFIX}{owner_pid}-{owner_started or 0}-sem-"
        self.names: list[str] = []

    def _make(self, cls: type[_T], value: int, maxvalue: int) -> _T:
        index = len(self.names)

        def create(name: str) -> tuple[str, object]:
            return name, _MP.SemLock(_SEMAPHORE, value, maxvalue, name, False)

        name, raw = create_unguessable(create, lambda token: f"{self._prefix}{token}-{index}",
                                       f"a named semaphore {self._prefix}<token>-{index}")
        self.names.append(name)
        return _wrap(cls, raw)

    def semaphore(self) -> MpSemaphore:
        return self._make(MpSemaphore, 0, _MP.SemLock.SEM_VALUE_MAX)

    def lock(self) -> MpLock:
        return self._make(MpLock, 1, 1)

    def unlink(self) -> None:
        _unlink(self.names)


class OpenedSemaphores:
    """The semaphores another process's ``NamedSemaphores`` made, opened in the same order."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self._next = 0

    def _open(self, cls: type[_T], maxvalue: int) -> _T:
        if self._next >= len(self.names):
            raise RuntimeError("more semaphores asked for than the arena's maker made")
        name = self.names[self._next]
        self._next += 1
        return _wrap(cls, _MP.SemLock._rebuild(0, _SEMAPHORE, maxvalue, name))

    def semaphore(self) -> MpSemaphore:
        return self._open(MpSemaphore, _MP.SemLock.SEM_VALUE_MAX)

    def lock(self) -> MpLock:
        return self._open(MpLock, 1)

    def unlink(self) -> None:
        _unlink(self.names)


def _wrap(cls: type[_T], raw: object) -> _T:
    """A multiprocessing ``Lock`` or ``Semaphore`` around ``raw`` (as its unpickling makes
    one: no after-fork hook, no resource tracker)."""
    made = cls.__new__(cls)
    made.__dict__["_semlock"] = raw
    getattr(made, "_make_methods")()  # noqa: B009 - not in the stubs
    return made


def _unlink(names: Sequence[str]) -> None:
    for name in names:
        with contextlib.suppress(OSError):
            _MP.sem_unlink(name)
