"""A race inside a library call: what noise at the points cannot help, and must not hurt.

Writers each set their own key of one table that a "library" keeps in shared
memory of its own (an anonymous shared mapping, not a tracker array): the
library's ``set`` reads the whole table, changes one entry and writes the whole
table back, with no lock and no point inside, as shared-memory-dict's
``__setitem__`` does with its pickled dict. Two writers whose calls overlap
write back each other's stale copies, so one key loses its value. At its next
step a writer reads its key back through the library and reports a violation
when its own last write is gone.

The race window is entirely inside the call, between two points: a delay at a
point can only slow a writer down, never widen the window. The bench measures
this tracker to see that the default noise costs (next to) nothing where it
cannot help. A free run holds the step lock from a point to the next one, so
that the code between two points runs alone; a real library call runs while
the other processes run, so each writer lets go of the step lock before the
call (``end_step`` of the harness's own runtime, which a tracker's ``Runtime`` does not
offer), and the calls can overlap. A free failure of it is then not guaranteed to
replay: the replay runs each call between its points.

No DRA vocabulary and no tracker import: the bench loads it by its path, like
any user's tracker (``shmstress run --tracker path/to/library_race.py:LibraryRaceTracker``).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Mapping
from typing import ClassVar

from shmstress.api import (
    Invariant,
    Parameter,
    Phase,
    RoleSpec,
    Runtime,
    Scope,
    Setup,
    Tracker,
    Workers,
)
from shmstress.core.runtime import Runtime as CoreRuntime


def _stay() -> None:
    """A runtime of another kind has no step lock to let go of."""


class SharedTable:
    """The "library": a table of int64 values in a shared mapping, set by read-modify-write.

    It knows nothing of shmstress: no point, no lock, as a third-party library's code.
    """

    def __init__(self, entries: int) -> None:
        self._format = f"={entries}q"
        self._block = mmap.mmap(-1, struct.calcsize(self._format))  # shared across the fork

    def get(self, key: int) -> int:
        return int(struct.unpack(self._format, self._block)[key])

    def set(self, key: int, value: int) -> None:
        table = list(struct.unpack(self._format, self._block))  # read the whole table,
        table[key] = value  # change one entry,
        self._block[:] = struct.pack(self._format, *table)  # write the whole table back

    def clear(self) -> None:
        self._block[:] = bytes(len(self._block))


_KEYS = 512  # entries of the table (its size sets the race window); at most this many writers


class OwnWriteKept(Invariant):
    name = "own-write-kept"
    summary = "a writer reads back the value it last set for its own key"
    fields = ("writer", "written", "found")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        return (f"{workers.describe(fields['writer'])} set its key to {fields['written']} and "
                f"read back {fields['found']}: another writer's stale copy overwrote it")

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        return Scope(subjects=(("table", 0),), worker=fields["writer"])


class Writer:
    """Sets its own key to 1, 2, 3, ... through the library, checking each write was kept."""

    def __init__(self, tracker: LibraryRaceTracker, index: int) -> None:
        self._t = tracker
        self._key = index
        self._written = 0

    def step(self, phase: Phase) -> bool:
        t = self._t
        if phase is not Phase.RUN:
            return False
        t.runtime.point("Reads its key back", table=0)
        found = t.table.get(self._key)
        if found != self._written:
            t.runtime.violation("own-write-kept", writer=t.runtime.worker_id,
                                written=self._written, found=found)
        self._written += 1
        t.runtime.point("Calls the library's set", table=0)
        t.let_go()  # the library runs while the others run
        t.table.set(self._key, self._written)
        return True


class LibraryRaceTracker(Tracker):
    """Writers setting their own keys of one shared table through a racy library call."""

    name: ClassVar[str] = "library-race"
    summary: ClassVar[str] = (
        "writers set their own keys of one table through a library call that reads, changes "
        "and writes back the whole table, with no point inside"
    )
    variants: ClassVar[Mapping[str, str]] = {
        "racy": "the library's set is an unlocked read-modify-write of the whole table (racy)",
    }
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "writer": RoleSpec(Writer, "sets its own key through the library, reads it back",
                           count=4),
    }
    parameters: ClassVar[Mapping[str, Parameter]] = {}
    invariants: ClassVar[tuple[Invariant, ...]] = (OwnWriteKept(),)

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime: Runtime = setup.runtime
        core = setup.runtime
        self.let_go: Callable[[], None] = (
            core.end_step if isinstance(core, CoreRuntime) else _stay)
        self.table = SharedTable(_KEYS)

    def reset(self) -> None:
        self.table.clear()
