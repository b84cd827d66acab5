"""The coordinator: build shared state, fork workers, watch them, settle, check, tear down.

The coordinator never runs tracker code on the hot path; it only flips the
phase, polls for violations, crashes and deadlines, and after the workers
are gone asks the tracker for the checks that need a state at rest.

A watchdog runs while the workers churn and drain: a worker that finishes no step
(reaches no new point) for ``hang_timeout`` seconds is reported hung with its own
stack, and the run ends with exit reason ``timeout``; what was recorded up to then
is collected from shared memory like any run's.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess

from shmstress.core.config import RunConfig
from shmstress.core.control import (
    FORK,
    W_FIRST_NS,
    W_PID,
    W_POINTS,
    W_STATE,
    ControlBlock,
    Phase,
    WorkerState,
)
from shmstress.core.crash import CrashReport
from shmstress.core.exit_reason import ExitReason
from shmstress.core.noise import AIMED
from shmstress.core.processes import dump_stacks, process_state, reap
from shmstress.core.result import NO_PROGRESS, RunResult, Violation
from shmstress.core.shm import Arena, sweep_stale_segments
from shmstress.core.signals import InterruptFlag, interruptible, shielded
from shmstress.core.workers import WorkerInfo, number_workers
from shmstress.free.aim import Accesses, AimTables, Subjects
from shmstress.free.learning import Learning
from shmstress.free.worker import worker_main
from shmstress.plugin import registry
from shmstress.plugin.assembly import Assembly, assemble, teardown
from shmstress.plugin.coverage import interleaving_coverage
from shmstress.plugin.probe import probe
from shmstress.plugin.resolve import resolve
from shmstress.plugin.violations import at_rest_violations, recorded_violations
from shmstress.plugin.wording import wording_of
from shmstress.record.recorder import Recorder

_POLL_S = 0.005
_WATCHDOG_S = 0.1  # how often the watchdog looks at the workers' progress
# The ends after which the workers are at rest and the checks at rest run.
_CLEAN_ENDS = (ExitReason.DURATION_REACHED, ExitReason.POINTS_REACHED, ExitReason.ROLES_FINISHED)

ProgressFn = Callable[[float, int], None]


@dataclass
class _Started:
    processes: list[BaseProcess]
    reports: list[Connection]
    hung: list[str] = field(default_factory=list)  # each hung worker, with its stack
    stuck: list[int] = field(default_factory=list)  # hung workers whose process ran (not stopped)
    stopped: bool = False  # a hung worker's process was stopped (a signal), or never reached
    # the harness's worker code (a machine too busy to start it): the run broke, not the code
    stuck_how: str = ""  # what the stuck workers did not do
    inside: bool = False  # the watchdog: one of them is stuck inside a step
    aim: tuple[AimTables, Subjects, Accesses] | None = None  # aimed noise's tables, for the workers


def run(config: RunConfig, progress: ProgressFn | None = None,
        learning: Learning | None = None) -> RunResult:
    """Run one configuration to its end and return what happened; never leaks a process.

    ``learning``: where aimed noise's tables start from and are saved to (None: start
    fresh, save nothing); unused under another policy."""
    tracker_cls = registry.load(config.tracker)
    config = resolve(config, tracker_cls)
    assert config.seed is not None and config.variant is not None
    probe(tracker_cls, config.variant, config.params, config.counts,
          origin=f"tracker {config.tracker}")
    sweep_stale_segments()
    t0 = time.monotonic()
    arena = Arena()
    started = _Started([], [])
    recorder: Recorder | None = None
    words = wording_of(tracker_cls, config.params).words
    with interruptible() as interrupt:
        try:
            if config.record:
                workers = len(number_workers(tracker_cls.roles, config.counts))
                recorder = Recorder(arena, workers, config.ring_size, config.tape_size)
            built = assemble(tracker_cls, config.variant, config.params, config.counts, arena,
                             max_violations=config.max_violations,
                             stop_on_violation=config.stop_on_first, checks=config.checks)
            if recorder is not None:
                built.runtime.sink = recorder.record
                built.runtime.log_sink = recorder.log
            aim = None
            loaded = None
            if config.noise.policy == AIMED and config.noise.probability > 0:
                aim = AimTables.allocate(arena)
                if learning is not None:
                    loaded = learning.load(config)
                    aim.preload(loaded.learnt)
            arena.freeze()
            control = built.control
            try:
                started.aim = (aim, words.subjects, words.accesses) if aim else None
                _start(config, built, started)
                reason, drain_timed_out = _watch(
                    config, built, started, t0, progress, interrupt
                )
            except KeyboardInterrupt:
                control.abort()
                reason, drain_timed_out = ExitReason.INTERRUPTED, False
            with shielded():
                forced = reap(started.processes, grace=0.5 if reason.exit_code else 2.0)
            elapsed = time.monotonic() - t0
            result = _result(config, built, started, reason, drain_timed_out, forced, elapsed)
            if aim is not None:
                aim.settle([v.seq for v in result.violations if v.seq is not None])
                notes = [loaded.problem] if loaded is not None and loaded.problem else []
                if learning is not None and reason is not ExitReason.INTERRUPTED:
                    unsaved = learning.save(config, aim.export())
                    notes += [f"{learning.file(config)} {unsaved}"] if unsaved else []
                result = replace(result, aim=replace(aim.stats(), notes=tuple(notes)))
            # Decoding the workers' rings takes seconds on a loaded machine: an interrupted
            # run does it only for a violation's report and bundle, and ends at once.
            if recorder is not None and (reason is not ExitReason.INTERRUPTED
                                         or result.violation_count):
                recording = recorder.collect(result.points)
                result = replace(result, recording=recording,
                                 coverage=interleaving_coverage(recording, words))
            teardown(built)
            return result
        finally:
            with shielded():
                _release(started, recorder, arena)


def _release(started: _Started, recorder: Recorder | None, arena: Arena) -> None:
    """Reap every worker, close their pipes, free the shared memory: nothing leaks."""
    reap(started.processes, grace=0.5)
    for conn in started.reports:
        conn.close()
    for process in started.processes:
        with contextlib.suppress(ValueError):
            process.close()
    if recorder is not None:
        recorder.release()
    arena.close()


def _start(config: RunConfig, built: Assembly, started: _Started) -> None:
    assert config.seed is not None
    me = os.getpid()
    for info in built.workers:
        receive, send = FORK.Pipe(duplex=False)
        process = FORK.Process(
            target=worker_main,
            name=f"shmstress-{info.role}-{info.index + 1}",
            args=(me, built, info, config.seed, config.noise, send, started.aim),
            daemon=True,
        )
        process.start()
        send.close()
        started.processes.append(process)
        started.reports.append(receive)


def _watch(
    config: RunConfig,
    built: Assembly,
    started: _Started,
    t0: float,
    progress: ProgressFn | None,
    interrupt: InterruptFlag,
) -> tuple[ExitReason, bool]:
    """Drive the phases until the run ends; returns why, and whether settling timed out."""
    control, tracker = built.control, built.tracker
    deadline = t0 + config.duration
    phase_since = t0
    drain_timed_out = False
    ended_by = ExitReason.DURATION_REACHED
    processes = started.processes
    last_progress = 0.0
    watchdog = _Watchdog(config.hang_timeout, len(processes), t0)
    while True:
        wait([p.sentinel for p in processes if p.exitcode is None], timeout=_POLL_S)
        now = time.monotonic()
        interrupt.check()
        if control.aborted:
            return ExitReason.VIOLATION, False
        if any(p.exitcode not in (None, 0) for p in processes) or any(
            control.worker_slot(w, W_STATE) == WorkerState.CRASHED for w in range(len(processes))
        ):
            control.abort()
            return ExitReason.WORKER_CRASHED, False
        phase = control.phase
        if progress is not None and now - last_progress >= 0.25:
            progress(now - t0, control.points)
            last_progress = now
        if phase is not Phase.STOP and now >= watchdog.next_look:
            hung = watchdog.hung(control, processes, now)
            if hung:
                started.hung += _stacks_of(built, processes, hung, (
                    f"finished no step (reached no new point) for {config.hang_timeout:g} s "
                    "(--hang-timeout)"), started)
                started.stuck_how = (f"reached no new point for {config.hang_timeout:g} s "
                                     "(--hang-timeout)")
                started.inside = True
                control.abort()
                return ExitReason.TIMEOUT, False
        if phase is Phase.RUN:
            if config.max_points is not None and control.points >= config.max_points:
                ended_by = ExitReason.POINTS_REACHED
            elif all(p.exitcode is not None for p in processes):
                # Every role ran to its end (each exited 0: a crash returned above); waiting
                # out the duration would only delay the checks at rest that can now fail.
                ended_by = ExitReason.ROLES_FINISHED
            elif now < deadline:
                continue
            control.set_phase(Phase.DRAIN)
            phase_since = now
        elif phase is Phase.DRAIN:
            settled = tracker.drained()
            if settled or now - phase_since > config.drain_timeout:
                drain_timed_out = not settled
                control.set_phase(Phase.STOP)
                phase_since = now
        elif all(p.exitcode is not None for p in processes):
            return ended_by, drain_timed_out
        elif now - phase_since > config.stop_timeout:
            alive = [w for w, p in enumerate(processes) if p.exitcode is None]
            started.hung += _stacks_of(built, processes, alive, (
                f"did not stop within {config.stop_timeout:g} s (--stop-timeout)"), started)
            started.stuck_how = (f"did not finish its role within {config.stop_timeout:g} s "
                                 "of the stop (--stop-timeout)")
            control.abort()
            return ExitReason.TIMEOUT, drain_timed_out


class _Watchdog:
    """When each worker last finished a step, from the points it publishes after each."""

    def __init__(self, timeout: float, workers: int, t0: float) -> None:
        self.timeout = timeout
        self.next_look = t0
        self._seen = [-1] * workers
        self._since = [t0] * workers  # start-up counts: a worker that never steps is hung

    def hung(self, control: ControlBlock, processes: list[BaseProcess], now: float) -> list[int]:
        """The workers that reached no new point for the timeout; once one has, also every
        other that reached none since the previous look. A worker stuck inside its step holds
        the step lock, so the others stop at their next point too, and the first to pass the
        timeout may be one of them: the stuck one must be among those named."""
        self.next_look = now + _WATCHDOG_S
        running = []
        for worker, process in enumerate(processes):
            if process.exitcode is not None or control.worker_slot(
                worker, W_STATE
            ) not in (WorkerState.STARTING, WorkerState.RUNNING):
                continue
            points = control.worker_slot(worker, W_POINTS)
            if points != self._seen[worker]:
                self._seen[worker], self._since[worker] = points, now
            running.append(worker)
        if not any(now - self._since[w] > self.timeout for w in running):
            return []
        return [w for w in running if self._since[w] < now]


def _stacks_of(
    built: Assembly, processes: list[BaseProcess], workers: list[int], what: str,
    started: _Started,
) -> list[str]:
    """One entry per worker: who, what it did not do, whether it was stopped, its stack.
    A worker whose process runs is the code under test not going on (``started.stuck``);
    one that was stopped (SIGSTOP), or whose process never reached the harness's worker
    code (it publishes its pid first thing: a machine so busy that a forked process did not
    run for seconds), is the run broken from outside (``started.stopped``). The others then
    wait for it at their first point, and that is no failure of the code under test either:
    it was a false "no progress", exit 1, with a bundle of no step, before."""
    states = {w: process_state(processes[w].pid or 0) for w in workers}
    for worker in workers:
        if states[worker] != "stopped" and not built.control.worker_slot(worker, W_PID):
            states[worker] = "not started"
    started.stuck += [w for w in workers if states[w] not in ("stopped", "not started")]
    started.stopped = started.stopped or any(
        state in ("stopped", "not started") for state in states.values())
    stacks = dump_stacks([processes[w] for w in workers])
    entries = []
    for worker in workers:
        pid = processes[worker].pid or 0
        info = built.workers[worker]
        who = WorkerInfo(info.worker_id, info.role, info.index, pid).describe()
        stopped = {"stopped": " (its process was stopped)",
                   "not started": " (its process never reached the worker's code: the "
                                  "machine did not run it)"}.get(states[worker], "")
        stack = stacks.get(pid, "(no stack: it exited)")
        entries.append(f"{who} hung: {what}{stopped}; its stack:\n{stack}")
    return entries


def _no_progress(
    control: ControlBlock, workers: tuple[WorkerInfo, ...], started: _Started
) -> Violation:
    """Who waits for what, as far as free mode knows: the stuck workers (their stacks are in
    the report) and what the others did. ``since``: where a replay probes (``progress``)."""
    stuck = started.stuck
    parts = [f"{workers[w].describe()} {started.stuck_how}" for w in stuck]
    if started.inside:  # the one inside its step holds the step lock the others wait for
        parts[-1] += (": it is stuck inside a step" if len(stuck) == 1 else
                      ": one of them is stuck inside a step, the others wait for it at their "
                      "next point")
    for info in workers:
        if info.worker_id not in stuck:
            state = control.worker_slot(info.worker_id, W_STATE)
            parts.append(f"{info.describe()} " + (
                "has finished its role" if state == WorkerState.FINISHED else "was still running"))
    return Violation(
        invariant=NO_PROGRESS,
        message="no progress: " + "; ".join(parts) + " (their stacks are in this report)",
        fields={"worker": stuck[0], "stuck": sum(1 << w for w in stuck),
                "since": control.points},
        worker=workers[stuck[0]],
        seq=control.points,
        elapsed_s=None,
    )


def _crash_reports(
    workers: tuple[WorkerInfo, ...], reports: list[Connection]
) -> dict[WorkerInfo, CrashReport]:
    """The workers whose role raised, with what each sent. An interrupt during start-up
    leaves the later workers unstarted: no pipe, no process."""
    raised = {}
    for info, conn in zip(workers, reports, strict=False):
        with contextlib.suppress(EOFError, OSError):
            if conn.poll():
                raised[info] = conn.recv()
    return raised


def _result(
    config: RunConfig,
    built: Assembly,
    started: _Started,
    reason: ExitReason,
    drain_timed_out: bool,
    forced: list[int],
    elapsed: float,
) -> RunResult:
    control = built.control
    workers = built.workers
    workers_seen = tuple(
        WorkerInfo(w.worker_id, w.role, w.index, control.worker_slot(w.worker_id, W_PID))
        for w in workers
    )
    invariants = built.tracker_cls.invariants
    violations = recorded_violations(
        control, invariants, workers_seen, config.params, t0_ns=control.t0_ns
    )
    count = control.violation_count
    clean_stop = reason in _CLEAN_ENDS
    if clean_stop and all(
        control.worker_slot(w.worker_id, W_STATE) == WorkerState.FINISHED for w in workers
    ):
        found = at_rest_violations(
            built.tracker_cls, built.tracker, workers_seen, config.params, config.checks
        )
        count += len(found)
        violations += found[: max(0, config.max_violations - len(violations))]
    crashes = list(started.hung)
    if reason is ExitReason.TIMEOUT and started.stuck and not started.stopped:
        # The code under test does not go on: a failure, with the bundle of what led there.
        violations.insert(0, _no_progress(control, workers_seen, started))
        count += 1
        reason = ExitReason.NO_PROGRESS
    raised = _crash_reports(workers_seen, started.reports)
    for info, report in raised.items():
        crashes.append(report.describe(info))
        violations.append(report.violation(info, control.t0_ns))
        count += 1
    died = []
    for info, process in zip(workers_seen, started.processes, strict=False):
        if process.exitcode not in (0, None) and not started.hung and info not in raised:
            died.append(info)
            crashes.append(f"{info.describe()} exited with code {process.exitcode}")
    if raised and not died and not started.hung and (
        reason is ExitReason.WORKER_CRASHED or reason in _CLEAN_ENDS
    ):
        reason = ExitReason.VIOLATION  # an exception the code under test raised: a failure
    elif crashes and reason in _CLEAN_ENDS:
        reason = ExitReason.WORKER_CRASHED
    firsts = [control.worker_slot(w.worker_id, W_FIRST_NS) for w in workers]
    startup = (max(firsts) - control.t0_ns) / 1e9 if firsts and all(firsts) else None
    return RunResult(
        config=config,
        exit_reason=reason,
        startup_s=startup,
        violations=tuple(violations),
        violation_count=count,
        elapsed_s=elapsed,
        points=control.points,
        workers=workers_seen,
        worker_points={
            w.worker_id: control.worker_slot(w.worker_id, W_POINTS) for w in workers
        },
        crashes=tuple(crashes),
        drain_timed_out=drain_timed_out,
        forced_pids=tuple(forced),
        phase_changes=control.phase_changes,
    )
