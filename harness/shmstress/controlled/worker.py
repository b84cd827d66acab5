"""A controlled worker process: alive for a whole session, one role run per execution."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection

from shmstress.controlled.channel import (
    ABORTED,
    CMD_EXIT,
    CRASHED,
    FINISHED,
    G_EXEC_SEED,
    G_RECORD,
    S_CMD,
    S_PHASE,
    S_STATE,
    S_STRIDE,
    Channel,
)
from shmstress.controlled.footprints import LockNoting
from shmstress.controlled.gate import ControlledGate
from shmstress.controlled.local_state import Pristine
from shmstress.core.control import PHASE, W_POINTS, W_STATE, WorkerState
from shmstress.core.crash import CrashReport
from shmstress.core.noise import NoiseConfig, NoiseGate
from shmstress.core.processes import become_worker
from shmstress.core.runtime import StopRun, worker_rng
from shmstress.core.shm import SharedArray
from shmstress.core.workers import WorkerInfo
from shmstress.plugin.assembly import Assembly
from shmstress.record.recorder import Recorder


@dataclass(frozen=True)
class WorkerSetup:
    """What every controlled worker inherits through the fork."""

    coordinator_pid: int
    built: Assembly
    channel: Channel
    recorder: Recorder
    noise_draws: NoiseConfig | None  # repeat a free run's noise draws (replays of free runs)
    step_locks: SharedArray | None = None  # the lock each step acquires, noted while recording


def controlled_worker_main(setup: WorkerSetup, info: WorkerInfo, crash_report: Connection) -> None:
    become_worker(setup.coordinator_pid)
    me = info.worker_id
    built = setup.built
    runtime = built.runtime
    channel = setup.channel
    control = runtime.control
    gate = ControlledGate(channel, me, control, setup.recorder)
    os.sched_yield = gate.note_yield  # only in this process: a role's yield is a hint
    pristine = Pristine(built.tracker)
    phase_of = built.phases(info.role)
    grant = channel.grants[me]
    globals_ = channel.globals.mv
    phase_cell = control.control.mv
    slots = channel.slots.mv
    phase_slot = me * S_STRIDE + S_PHASE
    while True:
        grant.acquire()
        if channel.slot(me, S_CMD) == CMD_EXIT:
            return
        rng = worker_rng(int(globals_[G_EXEC_SEED]), me)
        runtime.worker_id = me
        runtime.rng = rng
        runtime.last_seq = -1
        runtime.points = 0
        runtime.gate = gate
        runtime.one_at_a_time = True
        runtime.acquire_gate = gate
        runtime.acquire_hook = gate.before_acquire
        recording = bool(globals_[G_RECORD])
        runtime.sink = setup.recorder.record if recording else None
        runtime.log_sink = setup.recorder.log if recording else None
        runtime.observer = None
        if recording and setup.step_locks is not None:  # for footprints (controlled.footprints)
            noting = LockNoting(gate, setup.step_locks)
            runtime.acquire_gate = noting
            runtime.observer = noting.after_point
            runtime.acquire_hook = noting.before_acquire
        gate.lease = 0
        gate.yielded = 0
        gate.noise = NoiseGate(setup.noise_draws, rng, act=False) if setup.noise_draws else None
        control.set_worker_slot(me, W_STATE, WorkerState.RUNNING)
        state, crash = FINISHED, None
        try:
            step = built.role(pristine.fresh(), info).step
            while True:
                phase = phase_of(phase_cell[PHASE])
                slots[phase_slot] = phase
                if not step(phase):
                    break
        except StopRun:
            state = ABORTED
        except BaseException as exc:  # the code under test raised: a failure (see crash.py)
            state = CRASHED
            crash = CrashReport.of(exc, runtime.last_seq, time.monotonic_ns())
        control.set_worker_slot(me, W_POINTS, runtime.points)
        control.set_worker_slot(me, W_STATE, _WORKER_STATES[state])
        if crash is not None:
            crash_report.send(crash)
        channel.set_slot(me, S_STATE, state)
        channel.report.release()


_WORKER_STATES = {
    FINISHED: WorkerState.FINISHED,
    ABORTED: WorkerState.ABORTED,
    CRASHED: WorkerState.CRASHED,
}
