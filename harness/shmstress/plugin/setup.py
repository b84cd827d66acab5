"""What a tracker's ``__init__`` is given (``Setup``), and what its steps keep (``Runtime``).

``Setup`` exists only while the tracker is built, in the coordinator before any
worker is forked: everything it allocates (arrays, locks, ghost state) is in
shared memory every worker inherits. The tracker keeps ``setup.runtime`` for its
steps; in each worker that object is that worker's identity, RNG and gate.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from multiprocessing.synchronize import Lock as MpLock
from typing import Protocol

from shmstress.core.control import FORK, SEQ, ControlBlock
from shmstress.core.locks import InstrumentedLock
from shmstress.core.runtime import Runtime as CoreRuntime
from shmstress.core.shm import Arena, SharedArray
from shmstress.core.workers import WorkerInfo

GHOST_PREFIX = "ghost."
"""Ghost arrays are named ``ghost.<name>``: oracle state, not the system under test."""


class Runtime(Protocol):
    """What a tracker's steps may use of the harness; keep it from the ``Setup``."""

    @property
    def worker_id(self) -> int:
        """This worker's id (an index into the ``workers`` that ``render`` receives)."""
        ...

    @property
    def rng(self) -> random.Random:
        """This worker's RNG, derived from (run seed, worker id): draw every decision from it."""
        ...

    def point(self, label: str, **fields: object) -> int:
        """A step that is not a lock acquire; returns its sequence number."""
        ...

    def log(self, message: str, level: str = "I", **fields: object) -> None:
        """A log line between points ("I", "W" or "E"): what a step saw, not a step."""
        ...

    def violation(self, invariant: str, **fields: int) -> None:
        """Report a broken invariant where it happens (may stop the run at once)."""
        ...

    def idle(self) -> bool:
        """Yield and return True: what a step returns when its role has nothing to do yet."""
        ...


class Ghost:
    """Oracle bookkeeping for invariants: shared arrays outside the system under test.

    A ghost array may be written without a point (the probe's point check skips
    it), under ``lock``, a plain process-shared lock that is never a point nor a
    scheduling decision. ``seq()`` is the number of points handed out so far:
    every point numbered ``>= seq()`` begins after this call.
    """

    def __init__(self, arena: Arena, control: ControlBlock) -> None:
        self._arena = arena
        self._sequence = control.control.mv
        self.lock: MpLock = FORK.Lock()
        self.names: set[str] = set()

    def array(self, name: str, length: int, fill: int = 0) -> SharedArray:
        full = GHOST_PREFIX + name
        self.names.add(full)
        return self._arena.array(full, length, fill)

    def seq(self) -> int:
        return int(self._sequence[SEQ])


class Setup:
    """Allocations and facts of the run, for ``Tracker.__init__`` only."""

    def __init__(
        self,
        arena: Arena,
        runtime: CoreRuntime,
        workers: Sequence[WorkerInfo],
        checked: frozenset[str],
    ) -> None:
        self.runtime: Runtime = runtime
        """The tracker's steps reach the harness through this; keep it."""
        self.ghost = Ghost(arena, runtime.control)
        self._arena = arena
        self._core = runtime
        self._checked = checked
        role_workers: dict[str, tuple[int, ...]] = {}
        for worker in workers:
            role_workers[worker.role] = (*role_workers.get(worker.role, ()), worker.worker_id)
        self.role_workers: Mapping[str, tuple[int, ...]] = role_workers
        """Worker ids per role (a role with no workers is absent), e.g. to split work."""

    def array(self, name: str, length: int, fill: int = 0) -> SharedArray:
        """``length`` int64 values in shared memory, filled with ``fill``; names are unique."""
        return self._arena.array(name, length, fill)

    def lock(self, name: str) -> InstrumentedLock:
        """A reentrant process-shared lock whose acquire is a point (see ``Lock.held``)."""
        return self._core.lock(name)

    def workers(self, role: str) -> int:
        """How many workers run ``role`` in this run."""
        return len(self.role_workers.get(role, ()))

    def checks(self, invariant: str) -> bool:
        """Is ``invariant`` checked in this run? Skip bookkeeping for one that is not."""
        return invariant in self._checked
