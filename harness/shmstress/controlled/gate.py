"""The worker's side of controlled mode: at each point, go on under a lease or park and ask."""

from __future__ import annotations

from shmstress.controlled.channel import (
    G_AWAITED,
    G_AWAITED_N,
    G_CURRENT,
    G_HANDOFF_PREEMPTIONS,
    G_SCRIPT_END,
    G_STEP,
    PARKED,
    RUNNING,
    S_LABEL,
    S_LEASE,
    S_LOCK,
    S_STATE,
    S_STRIDE,
    S_YIELDED,
    Channel,
)
from shmstress.core.control import ABORT, L_OWNER, L_STRIDE, NO_OWNER, ControlBlock
from shmstress.core.noise import NoiseGate
from shmstress.core.runtime import StopRun
from shmstress.record.recorder import Recorder

PLUMBING = True
"""Point plumbing: the recorder looks past this module's frames for a call site."""


class ControlledGate:
    """Installed as both the point gate and the acquire gate of a controlled worker's runtime."""

    def __init__(
        self, channel: Channel, worker: int, control: ControlBlock, recorder: Recorder
    ) -> None:
        self._slots = channel.slots.mv
        self._me = worker
        self._workers = channel.workers
        self._base = worker * S_STRIDE
        self._script = channel.script.mv
        self._grants = channel.grants
        self._globals = channel.globals.mv
        self._step_log = channel.step_log.mv
        self._report = channel.report
        self._grant = channel.grants[worker]
        self._locks = control.lock_table.mv
        self._control = control.control.mv
        self._intern = recorder.intern
        self._ids: dict[str, int] = {}
        self.lease = 0
        self.yielded = 0
        self._took = -1  # the lock the step this worker took last acquires, or -1
        # A replay of a free run repeats the noise gate's draws (without sleeping), so the
        # worker's RNG hands the role the same values it had in the recorded run.
        self.noise: NoiseGate | None = None

    def note_yield(self) -> None:
        """Replaces ``os.sched_yield`` in a controlled worker: a yield is a scheduling hint."""
        self.yielded = 1

    def before_point(self, label: str) -> None:
        self.before_acquire(label, -1)

    def before_acquire(self, label: str, lock: int) -> None:
        """The point's decision (``lock``: the instrumented lock it acquires, or -1). Most
        points are acquires: this is the method itself, not a call more per point. It is
        also the runtime's ``acquire_hook``, so it checks for an aborted run first, as the
        runtime's ``before_acquire`` would have."""
        if self._control[ABORT]:
            raise StopRun
        if self.noise is not None:
            self.noise.before_point(label)
        ident = self._ids.get(label)
        if ident is None:
            ident = self._ids[label] = self._intern(label, call_site=True)
        if (
            self.lease
            and not self.yielded
            and (lock < 0 or self._locks[lock * L_STRIDE + L_OWNER] == NO_OWNER)
            and not (self._globals[G_AWAITED_N] and self._frees_awaited_lock())
        ):
            self.lease -= 1  # PCT's path: scripted grants carry no lease, so _took is not kept
            globals_ = self._globals
            step = globals_[G_STEP]
            self._step_log[step] = ident
            globals_[G_STEP] = step + 1
            return
        slots = self._slots
        base = self._base
        globals_ = self._globals
        step = globals_[G_STEP]
        successor = -1
        locks = self._locks
        took = self._took
        # May the script decide this step? Only while the set of runnable workers is the one
        # it was drawn for. Only the step just taken can have changed it, and it was this
        # worker's: it would block here, or the lock its previous step took is one another
        # parked worker waits at, or it freed a lock a blocked worker waits for. A worker
        # parking at a held lock ends the script itself (the first test), so no other change
        # is possible. Nothing here looks at the script's entry for this step: whether the
        # script goes on must not depend on the choice it would make (strategies/random_walk).
        # Inline, not a method: every point of a scripted walk asks.
        if (
            step < globals_[G_SCRIPT_END]
            and (lock < 0 or locks[lock * L_STRIDE + L_OWNER] == NO_OWNER)
            and (took < 0 or locks[took * L_STRIDE + L_OWNER] == NO_OWNER
                 or not self._awaited_by_another(took))
            and not (globals_[G_AWAITED_N] and self._frees_awaited_lock())
        ):
            successor = self._script[step]
            if successor == self._me:  # the script goes on with this worker
                self.yielded = 0
                self._took = lock
                self._step_log[step] = ident
                globals_[G_STEP] = step + 1
                return
        slots[base + S_LABEL] = ident
        slots[base + S_LOCK] = lock
        slots[base + S_YIELDED] = self.yielded
        slots[base + S_STATE] = PARKED
        if successor >= 0:  # the script hands the step to another worker: post it directly
            if not self.yielded:
                globals_[G_HANDOFF_PREEMPTIONS] += 1
            other = successor * S_STRIDE
            self._step_log[step] = slots[other + S_LABEL]
            globals_[G_STEP] = step + 1
            slots[other + S_LEASE] = 0
            slots[other + S_STATE] = RUNNING
            globals_[G_CURRENT] = successor
            self.yielded = 0
            self._grants[successor].release()
        else:
            self.yielded = 0
            self._report.release()
        self._grant.acquire()
        if self._control[ABORT]:
            raise StopRun
        self._took = lock
        self.lease = slots[base + S_LEASE]

    def _awaited_by_another(self, lock: int) -> bool:
        """Is another worker parked at an acquire of ``lock``?"""
        slots = self._slots
        me = self._me
        for other in range(self._workers):
            base = other * S_STRIDE
            if other != me and slots[base + S_STATE] == PARKED and slots[base + S_LOCK] == lock:
                return True
        return False

    def _frees_awaited_lock(self) -> bool:
        """Has this worker released a lock that a parked worker is blocked on?"""
        globals_ = self._globals
        count = globals_[G_AWAITED_N]
        if count:
            locks = self._locks
            for index in range(count):
                if locks[globals_[G_AWAITED + index] * L_STRIDE + L_OWNER] == NO_OWNER:
                    return True
        return False
