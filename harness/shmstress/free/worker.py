"""The body of a worker process: attach, loop over the role's steps, report how it ended."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from multiprocessing.connection import Connection

from shmstress.core.control import (
    W_FIRST_NS,
    W_PID,
    W_POINTS,
    W_STATE,
    W_STRIDE,
    WorkerState,
)
from shmstress.core.crash import CrashReport
from shmstress.core.noise import NoiseConfig
from shmstress.core.processes import become_worker
from shmstress.core.runtime import StopRun
from shmstress.core.workers import WorkerInfo
from shmstress.free.aim import Accesses, AimedGate, AimTables, Subjects
from shmstress.plugin.assembly import Assembly


def worker_main(
    coordinator_pid: int,
    built: Assembly,
    info: WorkerInfo,
    seed: int,
    noise: NoiseConfig,
    report: Connection,
    aim: tuple[AimTables, Subjects, Accesses] | None = None,
) -> None:
    """``aim``: the aimed-noise tables and the tracker's ``subjects`` and ``accesses``,
    when the policy is aimed; the worker's gate then delays at near-miss locations only."""
    become_worker(coordinator_pid)
    runtime = built.runtime
    control = runtime.control
    runtime.attach(info.worker_id, seed, noise, alone=True)
    if aim is not None and noise.probability > 0:
        tables, subjects, accesses = aim
        gate = AimedGate(tables, noise, subjects, seed, info.worker_id, control.control.mv,
                         accesses=accesses, let_go=runtime.end_step)
        runtime.gate = gate
        runtime.acquire_gate = gate
        runtime.gate_holds = True
        runtime.observer = gate.after_point
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
        # The end of the start-up transient is when every worker is past its first step:
        # time to first violation is also reported from there (a race between workers
        # that start one after another is not what a stress run is for).
        going = step(phase(phase_cell[1]))  # control.PHASE
        control.set_worker_slot(me, W_FIRST_NS, time.monotonic_ns())
        progress[at] = runtime.points
        if going:
            while step(phase(phase_cell[1])):
                progress[at] = runtime.points
    except StopRun:
        state = WorkerState.ABORTED
    except BaseException as exc:  # the code under test raised: a failure, not our breakage
        state = WorkerState.CRASHED
        crash = CrashReport.of(exc, runtime.last_seq, time.monotonic_ns())
    runtime.arrive_at_start(wait=False)  # ended before its first point: the others go on
    control.set_worker_slot(me, W_POINTS, runtime.points)
    control.set_worker_slot(me, W_STATE, state)
    if crash is not None:
        report.send(crash)  # the coordinator reports it, traceback and all
    # Leave now, past the interpreter's teardown in ``multiprocessing`` (its finalizers, the
    # threads of the process it was forked from): an exception there turned a worker that
    # had finished its role into "exited with code 1", once in a campaign run inside an
    # execnet gateway, with nothing to say why. The one finalizer a worker needs, letting
    # go of the step lock, runs here; what it printed is flushed.
    with contextlib.suppress(ValueError):  # "released too many times": it was free already
        runtime.end_step()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(1 if crash is not None else 0)

