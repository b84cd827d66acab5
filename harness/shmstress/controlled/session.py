"""The controlled-mode coordinator: one tracker, persistent workers, many executions.

A session builds the tracker once, forks one worker per role instance and
keeps them for every execution. Between executions the tracker's shared
arrays (and the harness's control block) are restored from a snapshot taken
right after the tracker was built, and every worker starts from a fresh copy
of its process-local state, so an execution costs no fork.

Within an execution exactly one worker runs. The coordinator waits for the
running worker to report (it reached a point it may not take on its own, or
its role finished), then asks the strategy who goes next. The global
sequence number of a point therefore equals its step index. A strategy that
scripts (random walk) is asked for the workers of several steps at once; the
workers then hand the step to each other as the script says, and the
coordinator learns who ran which step from the script and where it ended.
An execution decided by a strategy that observes (partial-order reduction) is
recorded, and its steps' footprints are built from the recording once it has
ended (``controlled.footprints``): nothing is added to the step loop.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from array import array
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import cast

from shmstress.controlled.channel import (
    CMD_EXECUTE,
    CMD_EXIT,
    CRASHED,
    FINISHED,
    G_AWAITED,
    G_AWAITED_N,
    G_CURRENT,
    G_EXEC_SEED,
    G_HANDOFF_PREEMPTIONS,
    G_RECORD,
    G_SCRIPT_END,
    G_STEP,
    PARKED,
    RUNNING,
    S_CMD,
    S_LABEL,
    S_LEASE,
    S_LOCK,
    S_PHASE,
    S_STATE,
    S_STRIDE,
    S_YIELDED,
    Channel,
    is_channel_array,
)
from shmstress.controlled.execution import FAILED, ExecutionEnd, ExecutionOutcome, PhasePlan
from shmstress.controlled.footprints import STEP_LOCKS, Footprints
from shmstress.controlled.local_state import lock_names
from shmstress.controlled.pinning import pinned
from shmstress.controlled.progress import (
    NO_PROGRESS,
    ProbeEnd,
    ProbeResult,
    probe,
    probe_capacity,
    spin_labels,
    stall_start,
)
from shmstress.controlled.strategies.base import (
    SEED_MASK,
    Delegating,
    Kinds,
    Observing,
    ScheduleDiverged,
    ScheduleEnded,
    Scripting,
    Strategy,
)
from shmstress.controlled.worker import WorkerSetup, controlled_worker_main
from shmstress.core.access import Footprint
from shmstress.core.control import (
    ABORT,
    FORK,
    HARNESS_ARRAYS,
    L_OWNER,
    L_STRIDE,
    MAX_LOCKS,
    NO_OWNER,
    PHASE,
    Phase,
)
from shmstress.core.crash import CrashReport
from shmstress.core.errors import ShmstressError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.noise import NoiseConfig
from shmstress.core.processes import dump_stacks, process_state, reap
from shmstress.core.result import Violation
from shmstress.core.shm import Arena, ArenaSnapshot
from shmstress.core.signals import checkpoint, shielded
from shmstress.core.trace import Recording, Step
from shmstress.core.workers import WorkerInfo
from shmstress.plugin.assembly import assemble, reset, teardown
from shmstress.plugin.setup import GHOST_PREFIX
from shmstress.plugin.tracker import Tracker
from shmstress.plugin.violations import at_rest_violations, recorded_violations
from shmstress.plugin.wording import wording_of
from shmstress.record.recorder import Recorder

_WAIT_SLICE_S = 0.1
DRAIN_SCRIPT = 16
"""The longest script while draining: the coordinator notices that the tracker settled only
when a script ends, so this bounds the steps of drain taken after it settled."""
_DRAIN = Phase.DRAIN  # a module constant: ``Phase.DRAIN`` costs a lookup through the metaclass
_RECORDING_ARRAYS = "recording."
DEADLOCK = "deadlock"  # the invariant name a deadlock is reported under


class WorkerLostError(ShmstressError):
    """A controlled worker died, or stopped answering, in the middle of an execution."""

    exit_code = ExitCode.BROKEN

    def __init__(self, message: str, hung: bool = False, worker: int = -1) -> None:
        super().__init__(message)
        self.hung = hung
        self.worker = worker  # the worker that died or hung


@dataclass(frozen=True)
class SessionSpec:
    """Everything a session is built from (the config is already resolved)."""

    tracker_cls: type[Tracker]
    variant: str
    params: Mapping[str, int]
    workers: tuple[WorkerInfo, ...]
    checks: tuple[str, ...] | None
    max_steps: int
    stop_timeout: float = 10.0
    ring_size: int = 16384
    noise_draws: NoiseConfig | None = None
    pin: bool = True


class _View:
    """The strategy's window on the coordinator's state (``strategies.base.SchedulerView``)."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self.step = 0
        self.current = -1
        self.runnable: list[int] = []
        self.current_can_continue = False
        self.workers = len(session.spec.workers)

    def label(self, worker: int) -> str:
        return self._session.label_text(self._session.channel.slot(worker, S_LABEL))

    def who(self, worker: int) -> str:
        return self._session.who(worker)

    def describe(self, worker: int) -> str:
        return self._session.describe_worker(worker)


class Session:
    """Persistent controlled workers for one scenario; ``execute`` runs one execution."""

    def __init__(self, spec: SessionSpec) -> None:
        self.spec = spec
        self._arena = Arena()
        self._processes: list[BaseProcess] = []
        self._crash_reports: list[Connection] = []
        self._crash_poll: select.poll | None = None  # every crash pipe, built at first use
        self._crash_fds: dict[int, int] = {}  # a crash pipe's descriptor -> its worker
        self._seen: tuple[WorkerInfo, ...] | None = None
        self._texts: list[str] = []
        # a step is immutable: one object per (label id, worker) serves every execution
        # (building one per step cost the coordinator about a microsecond a step)
        self.known_steps: dict[tuple[int, int], Step] = {}
        self._tape_used = 0
        self._pinning: contextlib.ExitStack | None = None
        self.pinned_cpu: int | None = None
        self._healthy = True
        self._kinds = Kinds()
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    # -- set-up and tear-down -----------------------------------------------------------------
    def _build(self) -> None:
        spec = self.spec
        arena = self._arena
        workers = len(spec.workers)
        capacity = spec.max_steps + probe_capacity(workers)  # room for the probe past the bound
        self.channel = Channel(arena, workers, max(MAX_LOCKS, workers), capacity)
        self.recorder = Recorder(arena, workers, spec.ring_size, capacity + 1)
        self._step_locks = arena.array(STEP_LOCKS, capacity + 1)
        self._footprints: Footprints | None = None
        counts = dict(Counter(w.role for w in spec.workers))
        built = assemble(spec.tracker_cls, spec.variant, spec.params, counts, arena,
                         checks=spec.checks)
        assert built.workers == spec.workers, "workers are numbered in one place"
        self._built = built
        self.control = built.control
        self.runtime = built.runtime
        tracker = built.tracker
        arena.freeze()
        # The coordinator only asks drained() and the checks at rest, which read shared
        # state; its own copy (never touched by a worker) serves every execution.
        self._tracker = tracker
        self._locks = lock_names(tracker)
        self._snapshot: ArenaSnapshot = arena.snapshot(
            lambda name: not (is_channel_array(name) or name.startswith(_RECORDING_ARRAYS))
        )
        self._tracker_arrays = lambda name: not (
            is_channel_array(name) or name.startswith((_RECORDING_ARRAYS, HARNESS_ARRAYS,
                                                       GHOST_PREFIX)))
        self._pinning = contextlib.ExitStack()
        self.pinned_cpu = self._pinning.enter_context(pinned(spec.pin))
        setup = WorkerSetup(os.getpid(), built, self.channel, self.recorder, spec.noise_draws,
                            self._step_locks)
        for info in spec.workers:
            receive, send = FORK.Pipe(duplex=False)
            process = FORK.Process(
                target=controlled_worker_main,
                name=f"shmstress-controlled-{info.role}-{info.index + 1}",
                args=(setup, info, send),
                daemon=True,
            )
            process.start()
            send.close()
            self._processes.append(process)
            self._crash_reports.append(receive)

    def close(self) -> None:
        """Let idle workers exit, reap every worker, free shared memory, restore CPU affinity."""
        with shielded():  # a second Ctrl-C must not leave workers or segments behind
            if self._healthy and self._processes:
                for worker in range(len(self._processes)):
                    self.channel.set_slot(worker, S_CMD, CMD_EXIT)
                    self.channel.grants[worker].release()
            reap(self._processes, grace=1.0 if self._healthy else 0.2)
            if hasattr(self, "_built") and self._healthy:
                teardown(self._built)
            for conn in self._crash_reports:
                conn.close()
            for process in self._processes:
                with contextlib.suppress(ValueError):
                    process.close()
            self._processes = []
            self._crash_reports = []
            if hasattr(self, "recorder"):
                self.recorder.release()
            self._arena.close()
            if self._pinning is not None:
                self._pinning.close()
                self._pinning = None

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            self._healthy = False
        self.close()

    @property
    def pids(self) -> tuple[int, ...]:
        return tuple(p.pid or 0 for p in self._processes)

    # -- names ----------------------------------------------------------------------------
    def label_text(self, ident: int) -> str:
        texts = self._texts
        while len(texts) <= ident:
            texts.append(self.recorder.label(len(texts)).text)
        return texts[ident]

    def who(self, worker: int) -> str:
        return self.spec.workers[worker].describe()  # no pid: the same in every execution

    def describe_worker(self, worker: int) -> str:
        channel = self.channel
        state = channel.slot(worker, S_STATE)
        who = self.who(worker)
        if state != PARKED:
            return f"{who} has finished its role" if state == FINISHED else f"{who} has stopped"
        label = self.label_text(channel.slot(worker, S_LABEL))
        lock = channel.slot(worker, S_LOCK)
        owner = self._lock_owner(lock) if lock >= 0 else NO_OWNER
        if owner != NO_OWNER:
            return (f"{who} waits at {label!r} for lock {self._locks.get(lock, str(lock))!r}, "
                    f"held by {self.who(owner)}")
        return f"{who} is at {label!r}"

    def tracker_state(self) -> ArenaSnapshot:
        """The tracker's own shared arrays (not the harness's, the recorder's or the ghost's)."""
        return self._arena.snapshot(self._tracker_arrays)

    def _lock_owner(self, lock: int) -> int:
        return int(self.control.lock_table.mv[lock * L_STRIDE + L_OWNER])

    # -- one execution --------------------------------------------------------------------
    def execute(
        self,
        strategy: Strategy,
        execution_seed: int,
        phases: PhasePlan,
        record: bool = False,
    ) -> ExecutionOutcome:
        """Run one execution to its end; the session is ready for the next one afterwards."""
        if not self._healthy:
            raise WorkerLostError("the controlled workers were lost in an earlier execution")
        checkpoint()  # a signal whose exception a fork swallowed (``_wait``)
        try:
            return self._execute(strategy, execution_seed, phases, record)
        except BaseException:
            self._healthy = False
            raise

    def _execute(
        self, strategy: Strategy, execution_seed: int, phases: PhasePlan, record: bool
    ) -> ExecutionOutcome:
        channel = self.channel
        execution_seed &= SEED_MASK  # a shared int64 slot carries it to the workers
        kinds = self._kinds
        member = (cast(Delegating, strategy).active if kinds.of(strategy, Delegating)
                  else strategy)  # a portfolio's member decides on its own
        observing = cast(Observing, member) if kinds.of(member, Observing) else None
        record = record or observing is not None  # its footprints come from the recording
        self._arena.restore(self._snapshot)
        reset(self._built)
        globals_ = channel.globals.mv
        globals_[G_STEP] = 0
        globals_[G_EXEC_SEED] = execution_seed
        globals_[G_RECORD] = int(record)
        globals_[G_AWAITED_N] = 0
        globals_[G_SCRIPT_END] = 0
        globals_[G_HANDOFF_PREEMPTIONS] = 0
        if record:
            self.recorder.ring_written.np[:] = 0
            self.recorder.tape.np[: self._tape_used] = 0
        tracker = self._tracker
        for worker in range(len(self.spec.workers)):
            channel.set_slot(worker, S_CMD, CMD_EXECUTE)
            channel.set_slot(worker, S_STATE, RUNNING)
            channel.grants[worker].release()
            self._wait(worker)
        scripting = cast(Scripting, member) if kinds.of(member, Scripting) else None
        scheduled = _Scheduling(self, member, scripting, phases, tracker)
        divergence: ScheduleDiverged | None = None
        stalled: ProbeResult | None = None
        try:
            end = scheduled.run()
            if end is ExecutionEnd.STEP_BOUND:
                end, stalled = self._probe(scheduled)
        except ScheduleDiverged as diverged:
            end, divergence = ExecutionEnd.DIVERGED, diverged
        except ScheduleEnded:
            end = ExecutionEnd.SCHEDULE_END
        steps = int(globals_[G_STEP])
        taken = scheduled.steps(steps)
        violations, count = self._violations()
        if end is ExecutionEnd.DEADLOCK:
            violations = (self._deadlock(steps), *violations)
            count += 1
        elif end is ExecutionEnd.NO_PROGRESS and stalled is not None:
            violations = (self._no_progress(stalled, stall_start(stalled, taken)), *violations)
            count += 1
        elif end is ExecutionEnd.FINISHED and scheduled.unsettled:
            end = ExecutionEnd.STEP_BOUND  # stopped before settling: nothing to check at rest
        elif end is ExecutionEnd.FINISHED or (end is ExecutionEnd.SCHEDULE_END
                                               and phases.rest_at_end):
            found = self._at_rest(tracker)  # at the schedule's end: the state it reached
            if found:
                end = ExecutionEnd.VIOLATION
                violations += found
                count += len(found)
        raised = self._crashes()
        self._unwind()
        if raised:  # the code under test raised: a failure with a bundle, like a violation
            workers = self._workers_seen()
            violations = (*(report.violation(workers[w]) for w, report in raised), *violations)
            count += len(raised)
            if end not in FAILED:
                end = ExecutionEnd.VIOLATION
        if record:
            self._tape_used = steps
        if observing is not None and divergence is None:
            observing.observe(self._observed(taken))
        return ExecutionOutcome(
            end=end,
            execution_seed=execution_seed,
            steps=taken,
            preemptions=scheduled.preemptions + int(globals_[G_HANDOFF_PREEMPTIONS]),
            phase_changes=tuple(scheduled.phase_changes),
            violations=violations,
            violation_count=count,
            divergence=divergence,
            crashes=tuple(report.describe(self._workers_seen()[w]) for w, report in raised),
            yields=None if scheduled.scripted else scheduled.yields,
        )

    def _observed(self, taken: Sequence[Step]) -> tuple[Footprint, ...]:
        """The footprint of every step of the execution just recorded (``footprints``)."""
        if self._footprints is None:
            words = wording_of(self.spec.tracker_cls, self.spec.params).words
            self._footprints = Footprints(words, self._step_locks)
        return self._footprints.build(self.recording(len(taken)), taken)

    def recording(self, points: int) -> Recording:
        """What the last execution run with ``record=True`` recorded."""
        return self.recorder.collect(points)

    def _wait(self, worker: int, follow: bool = False) -> None:
        """Wait for the running worker to report; a dead or hung worker ends the session.

        A signal whose exception a fork swallowed is delivered at the first slice the
        worker has not reported in, or at the next execution's start.
        ``follow``: the worker may have handed the step on (a script); watch whoever runs
        now. A hung worker's own stack goes into the error (``dump_stacks`` wakes a stopped
        one first).
        """
        report = self.channel.report
        if report.acquire(True, _WAIT_SLICE_S):
            return  # the common case: no checkpoint (about 10 us armed), ``execute`` has one
        checkpoint()
        deadline = time.monotonic() + self.spec.stop_timeout
        while not report.acquire(True, _WAIT_SLICE_S):
            checkpoint()
            if follow:
                worker = self.channel.slot_global(G_CURRENT)
            process = self._processes[worker]
            if process.exitcode is not None:
                raise WorkerLostError(f"{self.who(worker)} died with exit code {process.exitcode}")
            if time.monotonic() > deadline:
                pid = process.pid or 0
                why = ("its process was stopped" if process_state(pid) == "stopped"
                       else "a step that never returns?")
                stack = dump_stacks([process]).get(pid, "(no stack: it exited)")
                raise WorkerLostError(
                    f"{self.who(worker)} did not reach its next point within "
                    f"{self.spec.stop_timeout:g} s ({why}); its stack:\n{stack}",
                    hung=True, worker=worker,
                )

    def _unwind(self) -> None:
        """Stop every worker still waiting at a point; each unwinds and releases its locks."""
        channel = self.channel
        self.control.control.mv[ABORT] = 1
        for worker in range(len(self.spec.workers)):
            if channel.slot(worker, S_STATE) == PARKED:
                channel.set_slot(worker, S_STATE, RUNNING)
                channel.grants[worker].release()
                self._wait(worker)

    def _crashes(self) -> tuple[tuple[int, CrashReport], ...]:
        """The workers whose role raised in this execution, with what each sent. One poll
        of every worker's pipe at once (a ``Connection.poll`` each cost about 20 us)."""
        if self._crash_poll is None:
            self._crash_poll = select.poll()
            for worker, conn in enumerate(self._crash_reports):
                self._crash_poll.register(conn.fileno(), select.POLLIN)
                self._crash_fds[conn.fileno()] = worker
        ready = sorted(self._crash_fds[fd] for fd, _ in self._crash_poll.poll(0))
        crashes = []
        for worker in ready:
            conn = self._crash_reports[worker]
            with contextlib.suppress(EOFError, OSError):
                while conn.poll():
                    crashes.append((worker, conn.recv()))
        return tuple(crashes)

    # -- violations -------------------------------------------------------------------------
    def _workers_seen(self) -> tuple[WorkerInfo, ...]:
        """The workers with their pids (fixed for the session's life: built once)."""
        if self._seen is None:
            self._seen = tuple(WorkerInfo(w.worker_id, w.role, w.index, pid)
                               for w, pid in zip(self.spec.workers, self.pids, strict=True))
        return self._seen

    def _violations(self) -> tuple[tuple[Violation, ...], int]:
        spec = self.spec
        found = recorded_violations(
            self.control, spec.tracker_cls.invariants, self._workers_seen(), spec.params
        )
        return tuple(found), self.control.violation_count

    def _at_rest(self, tracker: Tracker) -> tuple[Violation, ...]:
        spec = self.spec
        return tuple(at_rest_violations(
            spec.tracker_cls, tracker, self._workers_seen(), spec.params, spec.checks
        ))

    def _probe(self, scheduled: _Scheduling) -> tuple[ExecutionEnd, ProbeResult | None]:
        """At the step bound: was the execution only long, or can it not go on?"""
        since = int(self.channel.globals.mv[G_STEP])
        result = probe(_Probing(self, scheduled), since,
                       lambda w: self.label_text(self.channel.slot(w, S_LABEL)))
        if self.control.control.mv[ABORT]:
            return ExecutionEnd.VIOLATION, None
        return {
            ProbeEnd.PROGRESS: (ExecutionEnd.STEP_BOUND, None),
            ProbeEnd.STALLED: (ExecutionEnd.NO_PROGRESS, result),
            ProbeEnd.DEADLOCK: (ExecutionEnd.DEADLOCK, None),
            ProbeEnd.FINISHED: (ExecutionEnd.STEP_BOUND, None),  # it finished past the bound
        }[result.end]

    def _no_progress(self, stalled: ProbeResult, start: int) -> Violation:
        """Who waits for what: the spinning workers first, then the blocked, then the rest."""
        channel = self.channel
        workers = range(len(self.spec.workers))
        spinning = [w for w in workers if spin_labels(stalled, w)]
        others = [w for w in workers if w not in spinning]
        others.sort(key=lambda w: channel.slot(w, S_STATE) != PARKED)
        parts = []
        for worker in spinning:
            labels = spin_labels(stalled, worker)
            turns = sum(1 for w, _ in stalled.turns if w == worker)
            where = " and ".join(repr(label) for label in labels)
            yields = ", yielding" if channel.slot(worker, S_YIELDED) else ""
            parts.append(f"{self.who(worker)} spins at {where} ({turns} turns{yields}, "
                         "and no step changed shared state)")
        parts.extend(self.describe_worker(w) for w in others)
        first = spinning[0] if spinning else 0
        return Violation(
            invariant=NO_PROGRESS,
            message="no progress: " + "; ".join(parts),
            fields={"worker": first, "stuck": sum(1 << w for w in spinning),
                    "since": stalled.since, "from": start},
            worker=self._workers_seen()[first],
            seq=int(channel.globals.mv[G_STEP]),
            elapsed_s=None,
        )

    def _deadlock(self, steps: int) -> Violation:
        channel = self.channel
        waiting = [w for w in range(len(self.spec.workers)) if channel.slot(w, S_STATE) == PARKED]
        first = waiting[0]
        lock = channel.slot(first, S_LOCK)
        return Violation(
            invariant=DEADLOCK,
            message="deadlock: " + "; ".join(self.describe_worker(w) for w in waiting),
            fields={"worker": first, "lock": lock, "holder": self._lock_owner(lock)},
            worker=self._workers_seen()[first],
            seq=steps,
            elapsed_s=None,
        )


class _Scheduling:
    """The step loop of one execution (the hot path of controlled mode)."""

    def __init__(
        self, session: Session, strategy: Strategy, scripting: Scripting | None,
        phases: PhasePlan, tracker: Tracker,
    ) -> None:
        self._session = session
        self._strategy = strategy  # the acting one: a portfolio's member
        self._scripting = scripting  # the same strategy, if it scripts
        self._phases = phases
        self._drained: Callable[[], bool] = tracker.drained
        self.preemptions = 0
        self.yields = 0  # yields the coordinator saw: all of them unless ``scripted``
        self.scripted = False  # workers handed steps on by a script: yields there go unseen
        self.unsettled = False  # the drain ran out of steps before the tracker settled
        self.phase_changes: list[int] = []
        # (first step, worker) of every grant; for a script, the script: its steps from
        # the first on were taken by the workers it names, up to the next grant
        self._grants: list[tuple[int, int | Sequence[int]]] = []

    def run(self) -> ExecutionEnd:
        session = self._session
        channel = session.channel
        workers = range(len(session.spec.workers))
        slots = channel.slots.mv
        globals_ = channel.globals.mv
        step_log = channel.step_log.mv
        grants = channel.grants
        locks = session.control.lock_table.mv
        control = session.control.control.mv
        max_steps = min(session.spec.max_steps, self._phases.step_limit or (1 << 62))
        strategy = self._strategy
        scripting = self._scripting
        self.scripted = scripting is not None
        script_log = channel.script.mv
        view = _View(session)
        forced = self._phases.forced
        run_steps = self._phases.run_steps
        drain_limit = run_steps + max(1, (max_steps - run_steps) // 2)
        # Phase members as locals: ``Phase.RUN`` is a lookup through the enum's metaclass,
        # about half a microsecond, and each grant compares several times.
        run, drain, stop = Phase.RUN, Phase.DRAIN, Phase.STOP
        phase = run
        current = -1
        grant_log = self._grants
        while True:
            if control[ABORT]:
                return ExecutionEnd.VIOLATION
            runnable: list[int] = []
            awaited: list[int] = []
            awaited_workers: list[int] = []
            for worker in workers:
                base = worker * S_STRIDE
                state = slots[base + S_STATE]
                if state == PARKED:
                    lock = slots[base + S_LOCK]
                    if lock >= 0 and locks[lock * L_STRIDE + L_OWNER] != NO_OWNER:
                        awaited.append(lock)
                        awaited_workers.append(worker)
                    else:
                        runnable.append(worker)
                elif state == CRASHED:
                    return ExecutionEnd.CRASHED
            if not runnable:
                return ExecutionEnd.DEADLOCK if awaited else ExecutionEnd.FINISHED
            step = globals_[G_STEP]
            if step >= max_steps:
                return ExecutionEnd.STEP_BOUND
            limit = max_steps - step
            if forced is not None:
                while phase - run < len(forced) and forced[phase - run] <= step:
                    phase = Phase(phase + 1)
                    control[PHASE] = phase
                    self.phase_changes.append(step)
                if phase - run < len(forced):
                    limit = min(limit, forced[phase - run] - step)
            else:
                if phase is run:
                    if step >= run_steps:
                        phase = drain
                        control[PHASE] = phase
                        self.phase_changes.append(step)
                    else:
                        limit = min(limit, run_steps - step)
                if phase is drain:
                    settled = self._settled(runnable, awaited_workers)
                    if settled or step >= drain_limit:
                        self.unsettled = not settled
                        phase = stop
                        control[PHASE] = phase
                        self.phase_changes.append(step)
                    else:
                        limit = min(limit, drain_limit - step)
            can_continue = current in runnable and not slots[current * S_STRIDE + S_YIELDED]
            if not can_continue and current in runnable:
                self.yields += 1
            view.step = step
            view.current = current
            view.runnable = runnable
            view.current_can_continue = can_continue
            script: Sequence[int] = ()
            if scripting is not None:
                script = scripting.next_script(
                    view, min(limit, DRAIN_SCRIPT) if phase is drain else limit)
                chosen, lease = script[0], 1
            else:
                chosen, lease = strategy.next_task(view)
            if can_continue and chosen != current:
                self.preemptions += 1
            base = chosen * S_STRIDE
            step_log[step] = slots[base + S_LABEL]
            globals_[G_STEP] = step + 1
            slots[base + S_LEASE] = min(lease, limit) - 1
            slots[base + S_STATE] = RUNNING
            globals_[G_AWAITED_N] = len(awaited)
            for index, lock in enumerate(awaited):
                globals_[G_AWAITED + index] = lock
            globals_[G_CURRENT] = chosen
            if len(script) > 1:
                grant_log.append((step, script))
                end = step + len(script)
                script_log[step:end] = array("q", script)  # a numpy slice took 5x as long
                globals_[G_SCRIPT_END] = end
                grants[chosen].release()
                session._wait(chosen, follow=True)
                globals_[G_SCRIPT_END] = 0
                current = int(globals_[G_CURRENT])
                continue
            grant_log.append((step, chosen))
            grants[chosen].release()
            session._wait(chosen)
            current = chosen

    def _settled(self, runnable: list[int], blocked: list[int]) -> bool:
        """Has the drain settled? Only once every waiting worker acts on DRAIN: a worker
        still inside a step it began in RUN may yet do what RUN allows (a release)."""
        slots = self._session.channel.slots.mv
        for worker in (*runnable, *blocked):
            if slots[worker * S_STRIDE + S_PHASE] < _DRAIN:
                return False
        return self._drained()

    def granted(self, step: int, worker: int) -> None:
        """A step granted outside ``run`` (the no-progress probe), for ``steps``."""
        self._grants.append((step, worker))

    def steps(self, count: int) -> tuple[Step, ...]:
        """The execution's schedule: every step's worker and label, in order."""
        session = self._session
        ids = session.channel.step_log.np[:count].tolist()
        known = session.known_steps
        out: list[Step] = []
        grants = self._grants
        for index, (first, who) in enumerate(grants):
            last = grants[index + 1][0] if index + 1 < len(grants) else count
            taken = ids[first:last]
            workers = [who] * len(taken) if isinstance(who, int) else who  # a script's
            for ident, worker in zip(taken, workers, strict=False):  # a script may end early
                step = known.get((ident, worker))
                if step is None:
                    step = known[ident, worker] = Step(worker, session.label_text(ident))
                out.append(step)
        return tuple(out)


class _Probing:
    """The probe's hands on a session (``progress.Stepper``): one step at a time, in turn."""

    def __init__(self, session: Session, scheduled: _Scheduling) -> None:
        self._session = session
        self._scheduled = scheduled
        channel = session.channel
        self._slots = channel.slots.mv
        self._globals = channel.globals.mv
        self._locks = session.control.lock_table.mv
        self._control = session.control.control.mv
        self._current = int(self._globals[G_CURRENT])

    def runnable(self) -> tuple[list[int], bool]:
        slots, locks = self._slots, self._locks
        runnable, blocked = [], False
        for worker in range(len(self._session.spec.workers)):
            base = worker * S_STRIDE
            if slots[base + S_STATE] != PARKED:
                continue
            lock = slots[base + S_LOCK]
            if lock >= 0 and locks[lock * L_STRIDE + L_OWNER] != NO_OWNER:
                blocked = True
            else:
                runnable.append(worker)
        return runnable, blocked

    def take(self, worker: int) -> None:
        session, slots, globals_ = self._session, self._slots, self._globals
        current = self._current
        if (worker != current and current in self.runnable()[0]
                and not slots[current * S_STRIDE + S_YIELDED]):
            self._scheduled.preemptions += 1  # counted as the step loop counts, as a replay will
        self._current = worker
        base = worker * S_STRIDE
        step = int(globals_[G_STEP])
        session.channel.step_log.mv[step] = slots[base + S_LABEL]
        globals_[G_STEP] = step + 1
        slots[base + S_LEASE] = 0
        slots[base + S_STATE] = RUNNING
        globals_[G_AWAITED_N] = 0
        globals_[G_CURRENT] = worker
        self._scheduled.granted(step, worker)
        session.channel.grants[worker].release()
        session._wait(worker)

    def settled(self, worker: int) -> bool:
        return bool(self._slots[worker * S_STRIDE + S_STATE] != PARKED or self._control[ABORT])

    def state(self) -> Hashable:
        return self._session.tracker_state()


def describe_ends(ends: Mapping[ExecutionEnd, int]) -> dict[str, int]:
    """How many executions ended each way, by the end's name (in the order first seen)."""
    return {end.value: count for end, count in ends.items()}
