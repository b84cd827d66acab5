"""The body of a worker process: attach, loop over the role's steps, report how it ended."""

from __future__ import annotations

import os
import sys
import time
from multiprocessing.connection import Connection

from shmstress.core.control import W_PID, W_POINTS, W_STATE, W_STRIDE, WorkerState
from shmstress.core.crash import CrashReport
from shmstress.core.noise import NoiseConfig
from shmstress.core.processes import become_worker
from shmstress.core.runtime import StopRun
from shmstress.core.workers import WorkerInfo
from shmstress.plugin.assembly import Assembly


def worker_main(
    coordinator_pid: int,
    built: Assembly,
    info: WorkerInfo,
    seed: int,
    noise: NoiseConfig,
    report: Connection,
) -> None:
    become_worker(coordinator_pid)
    runtime = built.runtime
    control = runtime.control
    runtime.attach(info.worker_id, seed, noise, alone=True)
    me = info.worker_id
    control.set_worker_slot(me, W_PID, os.getpid())
    control.set_worker_slot(me, W_STATE, WorkerState.RUNNING)
    state = WorkerState.FINISHED
    crash: CrashReport | None = None
    phase_cell = control.control.mv
    # The points made so far, after every step: the coordinator's watchdog reads them to
    # tell a worker that stopped making progress (hung, or stopped) from a busy one.
    progress, at = control.workers.mv, me * W_STRIDE + W_POINTS
    try:
        step = built.role(built.tracker, info).step
        phase = built.phases(info.role)
        while step(phase(phase_cell[1])):  # control.PHASE
            progress[at] = runtime.points
    except StopRun:
        state = WorkerState.ABORTED
    except BaseException as exc:  # the code under test raised: a failure, not our breakage
        state = WorkerState.CRASHED
        crash = CrashReport.of(exc, runtime.last_seq, time.monotonic_ns())
    control.set_worker_slot(me, W_POINTS, runtime.points)
    control.set_worker_slot(me, W_STATE, state)
    if crash is not None:
        report.send(crash)  # the coordinator reports it, traceback and all
        sys.exit(1)

