"""The worker's side of controlled mode: at each point, go on under a lease or park and ask."""

from __future__ import annotations

from shmstress.controlled.channel import (
    G_AWAITED,
    G_AWAITED_N,
    G_STEP,
    PARKED,
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
        self._base = worker * S_STRIDE
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
        # A replay of a free run repeats the noise gate's draws (without sleeping), so the
        # worker's RNG hands the role the same values it had in the recorded run.
        self.noise: NoiseGate | None = None

    def note_yield(self) -> None:
        """Replaces ``os.sched_yield`` in a controlled worker: a yield is a scheduling hint."""
        self.yielded = 1

    def before_point(self, label: str) -> None:
        self._arrive(label, -1)

    def before_acquire(self, label: str, lock: int) -> None:
        self._arrive(label, lock)

    def _arrive(self, label: str, lock: int) -> None:
        if self.noise is not None:
            self.noise.before_point(label)
        ident = self._ids.get(label)
        if ident is None:
            ident = self._ids[label] = self._intern(label, call_site=True)
        if (
            self.lease
            and not self.yielded
            and (lock < 0 or self._locks[lock * L_STRIDE + L_OWNER] == NO_OWNER)
            and not self._frees_awaited_lock()
        ):
            self.lease -= 1
            globals_ = self._globals
            step = globals_[G_STEP]
            self._step_log[step] = ident
            globals_[G_STEP] = step + 1
            return
        slots = self._slots
        base = self._base
        slots[base + S_LABEL] = ident
        slots[base + S_LOCK] = lock
        slots[base + S_YIELDED] = self.yielded
        self.yielded = 0
        slots[base + S_STATE] = PARKED
        self._report.release()
        self._grant.acquire()
        if self._control[ABORT]:
            raise StopRun
        self.lease = slots[base + S_LEASE]

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
