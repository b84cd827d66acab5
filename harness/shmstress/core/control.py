"""The coordinator's side of shared memory: sequence counter, phase, workers, violations, locks.

Everything the coordinator and the workers must agree on lives here, in one
place, so that a tracker's own arrays never mix with harness bookkeeping.
"""

from __future__ import annotations

import enum
import multiprocessing
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Lock as MpLock

from shmstress.core.shm import Arena, SharedArray

FORK = multiprocessing.get_context("fork")
HARNESS_ARRAYS = "harness."
"""Name prefix of the control block's arrays: harness bookkeeping, never a tracker's."""

# control array slots
SEQ = 0
PHASE = 1
ABORT = 2
VIOLATIONS = 3
T0_NS = 4
PHASE_CHANGES = 5  # points handed out when DRAIN, then STOP, began (+1; 0: not yet)
STARTED = 7  # free mode: workers at their first point or past it (finished, crashed)
_CONTROL_LEN = 8

# per-worker slots
W_PID = 0
W_STATE = 1
W_POINTS = 2
W_LAST_SEQ = 3
W_FIRST_NS = 4  # monotonic ns when the worker finished its first step (0: not yet)
W_STRIDE = 5

# per-violation slots
V_INVARIANT = 0
V_SEQ = 1
V_WORKER = 2
V_T_NS = 3
V_NFIELDS = 4
V_FIELDS = 5
MAX_VIOLATION_FIELDS = 12  # ints per violation; an at-rest one may carry where its story starts
V_STRIDE = V_FIELDS + MAX_VIOLATION_FIELDS

# per-lock slots
L_OWNER = 0
L_DEPTH = 1
L_STRIDE = 2

NO_OWNER = -1
MAX_LOCKS = 64
"""Instrumented locks per run: the lock table is sized once, before any worker exists."""


class Phase(enum.IntEnum):
    """Where a run is; roles read it to decide what to do next and when to finish."""

    RUN = 0
    DRAIN = 1  # no new churn; finish outstanding work so the state can settle
    STOP = 2  # finish in dependency order, then exit


class WorkerState(enum.IntEnum):
    STARTING = 0
    RUNNING = 1
    FINISHED = 2
    ABORTED = 3
    CRASHED = 4


@dataclass
class RawViolation:
    """A violation as workers store it: ints only, rendered to text by the coordinator."""

    invariant: int
    seq: int
    worker: int
    t_ns: int
    fields: tuple[int, ...]


class ControlBlock:
    """Shared harness state; created by the coordinator before any worker is forked."""

    def __init__(self, arena: Arena, workers: int, max_violations: int, max_locks: int) -> None:
        self.control: SharedArray = arena.array(HARNESS_ARRAYS + "control", _CONTROL_LEN)
        self.workers: SharedArray = arena.array(
            HARNESS_ARRAYS + "workers", max(1, workers) * W_STRIDE
        )
        self.violations: SharedArray = arena.array(
            HARNESS_ARRAYS + "violations", max(1, max_violations) * V_STRIDE
        )
        self.lock_table: SharedArray = arena.array(
            HARNESS_ARRAYS + "locks", max_locks * L_STRIDE, NO_OWNER
        )
        self.lock_table.np[L_DEPTH::L_STRIDE] = 0
        self.n_workers = workers
        self.max_violations = max(1, max_violations)
        self.max_locks = max_locks
        self.locks_used = 0
        self.seq_lock: MpLock = FORK.Lock()
        self.step_lock: MpLock = FORK.Lock()  # free mode: held from a point to the next one
        self.violation_lock: MpLock = FORK.Lock()
        self.control.mv[T0_NS] = time.monotonic_ns()

    # -- sequence -------------------------------------------------------------------------
    def next_seq(self) -> int:
        """Take the next global sequence number; callers inside a lock get per-lock order."""
        mv = self.control.mv
        with self.seq_lock:
            seq = mv[SEQ]
            mv[SEQ] = seq + 1
        return seq

    @property
    def points(self) -> int:
        return int(self.control.mv[SEQ])

    def arrive(self) -> None:
        """Count a worker at its first point, or one that ended before it (free mode)."""
        mv = self.control.mv
        with self.seq_lock:
            mv[STARTED] += 1

    @property
    def everyone_arrived(self) -> bool:
        return self.control.mv[STARTED] >= self.n_workers

    # -- phase and abort ------------------------------------------------------------------
    @property
    def phase(self) -> Phase:
        return Phase(self.control.mv[PHASE])

    def set_phase(self, phase: Phase) -> None:
        mv = self.control.mv
        if phase > mv[PHASE]:  # noted so that a replay can switch phases at the same point
            mv[PHASE_CHANGES + phase - 1] = mv[SEQ] + 1
        mv[PHASE] = int(phase)

    @property
    def phase_changes(self) -> tuple[int, ...]:
        """Points handed out when DRAIN and STOP began, as far as the run got."""
        mv = self.control.mv
        return tuple(mv[PHASE_CHANGES + i] - 1 for i in range(2) if mv[PHASE_CHANGES + i])

    @property
    def aborted(self) -> bool:
        return bool(self.control.mv[ABORT])

    def abort(self) -> None:
        self.control.mv[ABORT] = 1

    @property
    def t0_ns(self) -> int:
        return int(self.control.mv[T0_NS])

    # -- workers --------------------------------------------------------------------------
    def worker_slot(self, worker: int, slot: int) -> int:
        return int(self.workers.mv[worker * W_STRIDE + slot])

    def set_worker_slot(self, worker: int, slot: int, value: int) -> None:
        self.workers.mv[worker * W_STRIDE + slot] = value

    # -- violations -----------------------------------------------------------------------
    def record_violation(
        self, invariant: int, seq: int, worker: int, fields: tuple[int, ...], stop: bool
    ) -> None:
        """Store a violation (the first ``max_violations`` keep their details) and maybe abort."""
        t_ns = time.monotonic_ns()
        with self.violation_lock:
            mv = self.control.mv
            index = mv[VIOLATIONS]
            mv[VIOLATIONS] = index + 1
            if index < self.max_violations:
                base = index * V_STRIDE
                vmv = self.violations.mv
                vmv[base + V_INVARIANT] = invariant
                vmv[base + V_SEQ] = seq
                vmv[base + V_WORKER] = worker
                vmv[base + V_T_NS] = t_ns
                kept = fields[:MAX_VIOLATION_FIELDS]
                vmv[base + V_NFIELDS] = len(kept)
                for offset, value in enumerate(kept):
                    vmv[base + V_FIELDS + offset] = value
        if stop:
            self.abort()

    @property
    def violation_count(self) -> int:
        return int(self.control.mv[VIOLATIONS])

    def violation_records(self) -> list[RawViolation]:
        records = []
        vmv = self.violations.mv
        for index in range(min(self.violation_count, self.max_violations)):
            base = index * V_STRIDE
            nfields = vmv[base + V_NFIELDS]
            records.append(
                RawViolation(
                    invariant=vmv[base + V_INVARIANT],
                    seq=vmv[base + V_SEQ],
                    worker=vmv[base + V_WORKER],
                    t_ns=vmv[base + V_T_NS],
                    fields=tuple(vmv[base + V_FIELDS + i] for i in range(nfields)),
                )
            )
        return records

    # -- locks ----------------------------------------------------------------------------
    def allocate_lock_slot(self) -> int:
        if self.locks_used >= self.max_locks:
            raise ValueError(f"more than {self.max_locks} instrumented locks")
        slot = self.locks_used
        self.locks_used += 1
        return slot
