"""The plain-code coordinator: one host, one execution at a time, one step at a time.

Every execution starts from the same state: the board as it was once the
scenario's module was imported, and a ``main`` freshly forked by the host.
Exactly one process of the execution runs; when it parks (at its next point)
or finishes, the coordinator asks the strategy who goes next among the
processes whose wait is over. When nobody can go on and somebody has not
finished, the execution is stuck: a cycle of lock holders is a deadlock, any
other wait no process left can end (a lost notify) is no progress.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import sys
import time
from collections.abc import Hashable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import cast

from shmstress.controlled.pinning import pinned
from shmstress.controlled.progress import (
    ProbeEnd,
    ProbeResult,
    probe,
    probe_capacity,
    spin_labels,
)
from shmstress.controlled.strategies.base import (
    SEED_MASK,
    Kinds,
    Observing,
    ScheduleDiverged,
    ScheduleEnded,
    Strategy,
    acting,
)
from shmstress.core.control import FORK
from shmstress.core.errors import HostLostError, ScenarioError
from shmstress.core.fresh import HASH_SEED, FreshProcess
from shmstress.core.processes import reap
from shmstress.core.shm import Arena, CreatedSegments
from shmstress.core.signals import shielded
from shmstress.core.trace import Label
from shmstress.plain.board import (
    ARRAY_PREFIX,
    G_ABORT,
    G_FAIL_STEP,
    G_FAILED,
    G_GAPS,
    G_HOST_EXIT,
    G_LIMIT,
    G_OBJECTS,
    G_SCAN_MAPS,
    G_SEED,
    G_SLOTS,
    G_STEP,
    G_WAKE,
    GAP_STRIDE,
    HOST,
    NOBODY,
    O_COUNT,
    O_DEVICE,
    O_KEY,
    O_KIND,
    O_LIMIT,
    O_NAME,
    O_OWNER,
    O_PIPE_BYTES,
    O_RECEIVERS,
    O_SENDERS,
    O_SENT_BY,
    O_SITE,
    O_TAKEN_BY,
    O_UNFINISHED,
    P_ARG,
    P_LABEL,
    P_LEASE,
    P_NAME,
    P_OBJ,
    P_PID,
    P_STATE,
    P_STRIDE,
    P_WAIT,
    P_YIELDED,
    WAITSET,
    Board,
    Kind,
    State,
    ValueKind,
    Wait,
    handle_bit,
)
from shmstress.plain.footprints import Names, footprints
from shmstress.plain.host import BOOT, BoardSize, HostPlan, host_main
from shmstress.plain.outcome import PlainEnd, PlainFailure, PlainOutcome, PlainStep, Waiting
from shmstress.plain.progress import inert
from shmstress.plain.runtime import FreeNoise, PlainRuntime
from shmstress.plain.selfcheck import Gap, SelfCheck, scanned
from shmstress.plain.sources import Sources
from shmstress.plain.spec import PlainSpec
from shmstress.plain.sync.file_lock import path_of
from shmstress.plain.waits import can_go, file_lock_holders, queued_through

_WAIT_SLICE_S = 0.1
_POLL_S = 0.0005  # free mode: how often the coordinator looks
_STUCK_S = 0.05  # free mode: no step for this long, every process waiting: stuck
_RESTORED = tuple(ARRAY_PREFIX + name for name in ("slots", "objects", "globals", "segments",
                                                   "names", "digests"))
_DOUBLE = struct.Struct("<d")
_INT64 = struct.Struct("<q")


class _View:
    """The strategy's window on the execution (``strategies.base.SchedulerView``)."""

    def __init__(self, session: PlainSession) -> None:
        self._session = session
        self.step = 0
        self.current = -1
        self.runnable: list[int] = []
        self.current_can_continue = False
        self.workers = session.spec.max_processes

    def label(self, worker: int) -> str:
        return self._session.text(self._session.board.slot(worker, P_LABEL))

    def who(self, worker: int) -> str:
        return self._session.who(worker)

    def describe(self, worker: int) -> str:
        return self._session.describe(worker)


FRESH_HOST_EXECUTIONS = 1000
"""An exploration with at least this budget moves its host to a fresh interpreter
(``plain.host``, ``core.fresh``) after its first ``runner.FORKED_HOST_EXECUTIONS``, which run
in a fork of the coordinator (ready at once: many bugs are found in them): that costs about
0.1 s of CPU more per session (an interpreter and its imports, more without cached
bytecode), and saves at every process start of every execution the copy of the page
tables of numpy and the coordinator's other modules (fsbench_ok: 27 starts an execution).
Both hosts run the same schedules (traces hash identically)."""


class PlainSession:
    """A host with the scenario imported; ``execute`` runs one execution under a strategy.
    ``fresh_host``: the host is a new interpreter, not a fork (``FRESH_HOST_EXECUTIONS``)."""

    def __init__(self, spec: PlainSpec, names: Names | None = None,
                 fresh_host: bool = False) -> None:
        """``names``: the object ids of an earlier session of this exploration, which a
        search resumed from a checkpoint must keep (``plain/checkpoint.py``)."""
        self.spec = spec
        # a fresh interpreter has a __main__ of its own: a scenario defined in this one's
        # is there only in a fork
        self._fresh = fresh_host and spec.scenario.module != "__main__"
        # a fresh host attaches the board by name; a forked one inherits it
        self._arena = Arena.named() if self._fresh else Arena()
        self._host: BaseProcess | None = None
        self._labels: dict[int, Label] = {}  # interned strings never change: read once
        self._kinds = Kinds()  # which strategy classes learn from footprints
        # object ids of footprints, one per object for the session
        self._names = names if names is not None else Names()
        self._stalled: ProbeResult | None = None  # the last execution's probe, if it stalled
        self._healthy = True
        self.executions = 0  # run in this session (the self-check scans some: ``scanned``)
        self._pinning = contextlib.ExitStack()
        try:
            self._build()
        except BaseException:
            self._healthy = False
            self.close()
            raise

    def _build(self) -> None:
        spec = self.spec
        spec.validate()
        size = BoardSize(spec.max_processes, spec.max_objects, spec.max_steps,
                         probe_capacity(spec.max_processes),
                         mailbox_bytes=spec.mailbox_mib << 20)
        self.board, self.recorder = size.build(self._arena)
        self.created = CreatedSegments.of(self._arena.owner_pid, self._arena.owner_started)
        self.runtime = PlainRuntime(self.board, self.recorder, self.created)
        if spec.self_check:
            self.runtime.check = SelfCheck(self.board, self.recorder)
        if spec.free is not None:
            self.runtime.free = FreeNoise(spec.free.noise, spec.free.max_sleep_us / 1e6)
        self._arena.freeze()
        if spec.free is None:  # one process runs at a time: nothing is lost on one CPU
            self._pinning.enter_context(pinned(spec.pin))
        host, receive = self._start_host(size)
        with receive:
            if not receive.poll(spec.load_timeout):
                raise ScenarioError(f"importing {spec.scenario.describe()} did not finish within "
                                    f"{spec.load_timeout:g} s")
            try:
                kind, said = receive.recv()
            except EOFError:
                raise ScenarioError(f"the process importing {spec.scenario.describe()} died "
                                    f"(exit code {host.exitcode})") from None
        if kind == "error":
            raise ScenarioError(said.splitlines()[0])
        self.sources: Sources = said  # the code under test's files: a fresh host's alone
        self._snapshot = self._arena.snapshot(lambda name: name in _RESTORED)
        self._main = self.recorder.intern("main")

    def _start_host(self, size: BoardSize) -> tuple[BaseProcess, Connection]:
        """Start the host; it, and the end of the pipe its "ready" (or its error) comes over."""
        spec = self.spec
        if not self._fresh:
            receive, send = FORK.Pipe(duplex=False)
            self._host = FORK.Process(
                target=host_main, name="shmstress-plain-host",
                args=(self.runtime, spec.scenario, spec.trace, send, os.getpid()),
            )
            self._host.start()
            send.close()
            return self._host, receive
        receive, send = FORK.Pipe()
        env = dict(os.environ)
        unset = () if HASH_SEED in env else (HASH_SEED,)
        env.setdefault(HASH_SEED, "0")  # the host's string hashes: the same in every run
        self._host = FreshProcess(BOOT, (send.fileno(),), "shmstress-plain-host", env)
        self._host.start()
        send.close()
        receive.send(HostPlan(
            self._arena.layout(), size, self.created, self.runtime.free, spec.scenario,
            spec.trace, os.getpid(), tuple(sys.path), tuple(sys.argv), unset,
            spec.self_check))
        return self._host, receive

    def close(self) -> None:
        """Let the host go, reap it, free the board."""
        with shielded():
            host = self._host
            if host is not None:
                if self._healthy and hasattr(self, "board"):
                    self.board.globals.mv[G_HOST_EXIT] = 1
                    self.board.host_go.release()
                reap([host], grace=2.0 if self._healthy else 0.2)
                with contextlib.suppress(ValueError):
                    host.close()
                self._host = None
            if hasattr(self, "created"):  # what a host that died could not unlink
                self.created.unlink_left()
            if hasattr(self, "recorder"):
                self.recorder.release()
            self._arena.close()
            self._pinning.close()

    def __enter__(self) -> PlainSession:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if value is not None:
            self._healthy = False
        self.close()

    # -- names ----------------------------------------------------------------------------
    def label(self, ident: int) -> Label:
        found = self._labels.get(ident)
        if found is None:
            found = self._labels[ident] = self.recorder.label(ident)
        return found

    def text(self, ident: int) -> str:
        return self.label(ident).text

    def who(self, worker: int) -> str:
        return self.text(self.board.slot(worker, P_NAME))

    def object_name(self, obj: int) -> str:
        return self.text(self.board.obj(obj, O_NAME))

    def describe(self, worker: int) -> str:
        board = self.board
        state = board.slot(worker, P_STATE)
        who = self.who(worker) if state != State.UNUSED else f"process #{worker}"
        if state == State.FINISHED:
            return f"{who} has finished"
        if state != State.PARKED:
            return f"{who} has not started" if state == State.UNUSED else f"{who} is running"
        label = self.text(board.slot(worker, P_LABEL))
        if can_go(board, worker):
            return f"{who} is at {label!r}"
        return f"{who} {self._waiting(worker).reason}"

    # -- one execution --------------------------------------------------------------------
    def execute(self, strategy: Strategy | None, execution_seed: int) -> PlainOutcome:
        """Run one execution to its end; the session is ready for the next one afterwards."""
        if not self._healthy:
            raise HostLostError("the scenario's host was lost in an earlier execution")
        try:
            return self._execute(strategy, execution_seed & SEED_MASK)
        except BaseException:
            self._healthy = False
            self._kill_execution()
            raise

    def _execute(self, strategy: Strategy | None, seed: int) -> PlainOutcome:
        board = self.board
        self._arena.restore(self._snapshot)
        globals_ = board.globals.mv
        globals_[G_SEED] = seed
        for field in (G_STEP, G_ABORT, G_WAKE, G_FAILED, G_LIMIT):
            globals_[field] = 0
        globals_[G_SCAN_MAPS] = scanned(self.executions)
        self.executions += 1
        globals_[G_SLOTS] = 1
        self._stalled = None
        self.runtime.claim_slot(0, "main", self._main)
        clock = (time.monotonic_ns(), time.time_ns())
        board.host_go.release()
        if strategy is None:
            end, divergence, preemptions = self._watch(), None, -1  # -1: nobody chose
        else:
            end, divergence, preemptions = self._schedule(strategy)
        if end is PlainEnd.FAILED and globals_[G_LIMIT]:
            end = PlainEnd.LIMIT
        failure = self._failure(end)
        outcome = PlainOutcome(
            end=end, execution_seed=seed, steps=self._steps(),
            processes=tuple(self.who(s) for s in range(int(globals_[G_SLOTS]))),
            preemptions=preemptions, failure=failure, divergence=divergence,
            pids=tuple(board.slot(s, P_PID) for s in range(int(globals_[G_SLOTS]))),
            clock=clock, uncontrolled=self._gaps(),
        )
        self._unwind(end is PlainEnd.HUNG)
        if strategy is not None:
            self._tell(strategy, outcome)
        return outcome

    def _tell(self, strategy: Strategy, outcome: PlainOutcome) -> None:
        """A strategy that learns from footprints (DPOR) hears what each step touched."""
        observer = acting(strategy)
        if self._kinds.of(observer, Observing):
            cast(Observing, observer).observe(
                footprints(outcome.steps, outcome.processes, self._names))

    def _schedule(self, strategy: Strategy) -> tuple[PlainEnd, ScheduleDiverged | None, int]:
        board = self.board
        globals_ = board.globals.mv
        slots = board.slots.mv
        view = _View(self)
        max_steps = self.spec.max_steps
        current = -1
        preemptions = 0
        while True:
            if globals_[G_FAILED]:
                return PlainEnd.FAILED, None, preemptions
            in_use = int(globals_[G_SLOTS])
            runnable = [s for s in range(in_use)
                        if slots[s * P_STRIDE + P_STATE] == State.PARKED and can_go(board, s)]
            if not runnable:
                if all(slots[s * P_STRIDE + P_STATE] == State.FINISHED for s in range(in_use)):
                    return PlainEnd.FINISHED, None, preemptions
                return self._stuck(), None, preemptions
            step = int(globals_[G_STEP])
            if step >= max_steps:
                return self._probe(current, preemptions)
            can_continue = current in runnable and not slots[current * P_STRIDE + P_YIELDED]
            view.step, view.current, view.runnable = step, current, runnable
            view.current_can_continue = can_continue
            try:
                chosen, lease = strategy.next_task(view)
            except ScheduleEnded:
                return PlainEnd.SCHEDULE_END, None, preemptions
            except ScheduleDiverged as diverged:
                return PlainEnd.DIVERGED, diverged, preemptions
            if can_continue and chosen != current:
                preemptions += 1
            base = chosen * P_STRIDE
            board.take_step(int(slots[base + P_LABEL]), chosen)  # its process stamps the time
            slots[base + P_LEASE] = max(0, min(lease, max_steps - step) - 1)
            slots[base + P_STATE] = State.RUNNING
            globals_[G_WAKE] = 0
            board.grants[chosen].release()
            if not self._wait(chosen):
                self._hung = chosen
                return PlainEnd.HUNG, None, preemptions
            current = chosen

    def _probe(self, current: int, preemptions: int) -> tuple[PlainEnd, None, int]:
        """At the step bound: only long, or stuck? (``plain.progress``; a replay reaches the
        same bound, as its bundle keeps --max-steps, and probes the same way.)"""
        stepper = _Probing(self, current)
        result = probe(stepper, int(self.board.globals.mv[G_STEP]),
                       lambda s: self.text(self.board.slot(s, P_LABEL)))
        preemptions += stepper.preemptions
        if stepper.hung >= 0:
            self._hung = stepper.hung
            return PlainEnd.HUNG, None, preemptions
        if self.board.globals.mv[G_FAILED]:
            return PlainEnd.FAILED, None, preemptions
        if result.end is ProbeEnd.STALLED:
            self._stalled = result
            return PlainEnd.NO_PROGRESS, None, preemptions
        if result.end is ProbeEnd.DEADLOCK:
            return self._stuck(), None, preemptions
        return PlainEnd.STEP_BOUND, None, preemptions

    def _watch(self) -> PlainEnd:
        """Free mode: watch the execution run on its own until it ends or gets stuck."""
        board = self.board
        globals_ = board.globals.mv
        slots = board.slots.mv
        last_step, last_change = -1, time.monotonic()
        while True:
            time.sleep(_POLL_S)
            if globals_[G_FAILED]:
                return PlainEnd.FAILED
            in_use = int(globals_[G_SLOTS])
            states = [slots[s * P_STRIDE + P_STATE] for s in range(in_use)]
            if all(state == State.FINISHED for state in states):
                return PlainEnd.FINISHED
            if globals_[G_ABORT]:
                return PlainEnd.STEP_BOUND  # only a process at the step bound aborts
            step, now = int(globals_[G_STEP]), time.monotonic()
            if step != last_step:
                last_step, last_change = step, now
                continue
            waiting = [s for s in range(in_use) if states[s] != State.FINISHED]
            if now - last_change > _STUCK_S and all(
                    states[s] == State.PARKED and not can_go(board, s) for s in waiting):
                return self._stuck()
            if now - last_change > self.spec.stop_timeout:
                running = [s for s in waiting if states[s] != State.PARKED] or waiting
                self._hung = running[0]
                pid = board.slot(self._hung, P_PID)
                if pid > 0:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGUSR1)
                    time.sleep(0.2)
                return PlainEnd.HUNG

    def _wait(self, worker: int) -> bool:
        """Wait for the running process to park or finish; False if it does not in time."""
        report = self.board.report
        if report.acquire(True, _WAIT_SLICE_S):
            return True
        deadline = time.monotonic() + self.spec.stop_timeout
        while not report.acquire(True, _WAIT_SLICE_S):
            if self._host is None or not self._host.is_alive():
                raise HostLostError(f"the scenario's host died (exit code "
                                    f"{self._host.exitcode if self._host else None})")
            if time.monotonic() > deadline:
                pid = self.board.slot(worker, P_PID)
                if pid > 0:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGUSR1)  # faulthandler: its stack on stderr
                    time.sleep(0.2)
                return False
        return True

    def _unwind(self, hung: bool) -> None:
        """End the execution: every parked process unwinds; the host reaps them all."""
        board = self.board
        globals_ = board.globals.mv
        globals_[G_ABORT] = 1
        if hung:
            self._kill_execution()
        for slot in range(int(globals_[G_SLOTS])):
            if board.slot(slot, P_STATE) == State.PARKED:
                board.set_slot(slot, P_STATE, State.RUNNING)
                board.grants[slot].release()
        if not board.host_done.acquire(True, self.spec.stop_timeout):
            self._kill_execution()
            if not board.host_done.acquire(True, self.spec.stop_timeout):
                raise HostLostError("the scenario's processes did not exit after the execution")
        while board.report.acquire(False):
            pass
        for grant in board.grants:
            while grant.acquire(False):
                pass

    def _kill_execution(self) -> None:
        main = self.board.slot(0, P_PID) if hasattr(self, "board") else 0
        if main > 0:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(main, signal.SIGKILL)

    # -- what happened ----------------------------------------------------------------------
    def _steps(self) -> tuple[PlainStep, ...]:
        board = self.board
        count = int(board.globals.mv[G_STEP])
        labels = board.step_label.mv[:count].tolist()
        workers = board.step_slot.mv[:count].tolist()
        indexes = board.step_index.mv[:count].tolist()
        values = board.step_value.mv[:count].tolist()
        kinds = board.step_kind.mv[:count].tolist()
        times = board.step_time.mv[:count].tolist()
        loose = board.step_loose.mv[:count].tolist()
        out = []
        for label, worker, index, word, kind, t_ns, unlocked in zip(
                labels, workers, indexes, values, kinds, times, loose, strict=True):
            site = self.label(label)
            out.append(PlainStep(worker, site.text, site.file, site.line, index,
                                 _decoded(kind, word), kind != ValueKind.ABSENT, t_ns,
                                 bool(unlocked)))
        return tuple(out)

    def _gaps(self) -> tuple[str, ...]:
        """The self-check's rows (``plain.selfcheck``), a line each."""
        board = self.board
        gaps = board.gaps.mv
        lines = []
        for index in range(int(board.globals.mv[G_GAPS])):
            kind, slot, what, since, site = (
                int(value) for value in gaps[index * GAP_STRIDE: (index + 1) * GAP_STRIDE])
            who, name = self.who(slot), self.text(what)
            if kind == Gap.WRITE:  # in free mode another process may have made it
                did = f"{name} changed, seen by {who}," if self.spec.free else \
                    f"{who} changed {name}"
                lines.append(f"{did} with no step that writes it, "
                             f"{self._between(since, site)}: code shmstress does not see "
                             "wrote it (a C call, ctypes, a module not traced: --trace it)")
            elif kind == Gap.MAPPING:
                lines.append(f"{who} mapped {name} shared and writable, unknown to shmstress: "
                             "its reads and writes are no steps")
            else:
                lines.append(f"{who} started thread {name!r} ({self._where(site)}): it runs "
                             "beside the scheduler, not under it")
        return tuple(lines)

    def _where(self, site: int) -> str:
        label = self.label(site)
        return f"{label.file}:{label.line}" if label.line > 0 else "where it starts"

    def _between(self, since: int, site: int) -> str:
        start = (f"after {self.text(since)!r} ({self._where(since)})" if since
                 else "after it began")
        end = f"before {self.text(site)!r} ({self._where(site)})" if site else "before it ended"
        return f"{start} and {end}"

    def _failure(self, end: PlainEnd) -> PlainFailure | None:
        board = self.board
        globals_ = board.globals.mv
        if end in (PlainEnd.FAILED, PlainEnd.LIMIT):
            text = board.failure_text()
            lines = [line for line in text.strip().splitlines() if line.strip()]
            message = lines[-1].strip() if lines else "the process raised"
            return PlainFailure(end, int(globals_[G_FAILED]) - 1, message, text,
                                int(globals_[G_FAIL_STEP]))
        if end is PlainEnd.HUNG:
            worker = self._hung
            return PlainFailure(end, worker, (
                f"{self.who(worker)} did not reach its next point within "
                f"{self.spec.stop_timeout:g} s (it blocks or loops in code shmstress does not "
                "control); its stack is above"), "", int(globals_[G_STEP]))
        if end is PlainEnd.NO_PROGRESS and self._stalled is not None:
            return self._spinning(self._stalled)
        if end in (PlainEnd.DEADLOCK, PlainEnd.NO_PROGRESS):
            waiting = tuple(self._waiting(s) for s in range(int(globals_[G_SLOTS]))
                            if board.slot(s, P_STATE) == State.PARKED)
            return PlainFailure(end, *self._verdict(end, waiting), int(globals_[G_STEP]),
                                waiting)
        return None

    def _spinning(self, stalled: ProbeResult) -> PlainFailure:
        """Who waits for what when processes spin: the spinners, then everyone else."""
        board = self.board
        in_use = range(int(board.globals.mv[G_SLOTS]))
        spinning = [s for s in in_use if spin_labels(stalled, s)]
        parts, waiting = [], []
        for slot in spinning:
            labels = " and ".join(repr(label) for label in spin_labels(stalled, slot))
            turns = sum(1 for s, _ in stalled.turns if s == slot)
            parts.append(f"{self.who(slot)} spins at {labels} ({turns} turns, and no step "
                         "changed shared state)")
            waiting.append(Waiting(slot, self.text(board.slot(slot, P_LABEL)),
                                   f"spins at {labels}"))
        for slot in in_use:
            if slot not in spinning:
                parts.append(self.describe(slot))
                if board.slot(slot, P_STATE) == State.PARKED:
                    waiting.append(self._waiting(slot))
        message = "no progress: " + "; ".join(parts)
        return PlainFailure(PlainEnd.NO_PROGRESS, spinning[0] if spinning else -1, message,
                            "\n".join(parts), stalled.since, tuple(waiting))

    def _stuck(self) -> PlainEnd:
        board = self.board
        waiting = [self._waiting(s) for s in range(int(board.globals.mv[G_SLOTS]))
                   if board.slot(s, P_STATE) == State.PARKED]
        return PlainEnd.DEADLOCK if _cycle(waiting) else PlainEnd.NO_PROGRESS

    def _waiting(self, worker: int) -> Waiting:
        board = self.board
        wait = board.slot(worker, P_WAIT)
        obj = board.slot(worker, P_OBJ)
        label = self.text(board.slot(worker, P_LABEL))
        held = tuple(self.object_name(o) for o in range(_objects(board))
                     if board.obj(o, O_KIND) in _HELD and board.obj(o, O_OWNER) == worker)
        holder = -1
        if wait == Wait.LOCK:
            holder = board.obj(obj, O_OWNER)
            reason = (f"waits for {self.object_name(obj)}, held {self._by(holder)}"
                      f"{self._site(obj, holder)}")
            holder = holder if holder >= 0 else -1
        elif wait == Wait.JOIN:
            holder = obj
            reason = f"waits to join {self.who(obj)}"
        elif wait == Wait.NOTIFY:
            reason = f"waits on {self.object_name(obj)} for a notify"
        elif wait == Wait.EVENT:
            reason = f"waits for {self.object_name(obj)} to be set"
        elif wait == Wait.SEMAPHORE:
            reason = f"waits for {self.object_name(obj)}, which is at zero"
            taker = board.obj(obj, O_OWNER)  # a named semaphore's last taker, if no release since
            if taker != NOBODY:
                reason += f", taken last {self._by(taker)}{self._site(obj, taker)}"
                holder = taker if taker >= 0 else -1
        elif wait == Wait.BARRIER:
            reason = (f"waits at {self.object_name(obj)} ({board.obj(obj, O_COUNT)} of "
                      f"{board.obj(obj, O_LIMIT)} arrived)")
        elif wait in (Wait.MESSAGE, Wait.ROOM, Wait.TASKS_DONE, Wait.ANY,
                      Wait.FLUSHED):  # queues, pipes
            reason, holder = self._waiting_on_channel(worker, wait, obj)
        elif wait == Wait.FILE_LOCK:
            owner, shared = file_lock_holders(board, obj, worker)
            holders = [owner] if owner != NOBODY else shared
            holder = next((h for h in holders if h >= 0), -1)
            by = " and ".join(self._by(h).removeprefix("by ") for h in holders)
            mode = "" if owner != NOBODY else " (shared)"
            path = path_of(board.slot(worker, P_PID), board.obj(obj, O_DEVICE),
                           board.obj(obj, O_KEY))
            on = f" on {path}" if path else ""
            reason = (f"waits for {self.object_name(obj)}{on}, held by {by}{mode}"
                      f"{self._site(obj, holder)}")
        else:
            reason = f"is at {label!r}"
        return Waiting(worker, label, reason, holder, held)

    def _waiting_on_channel(self, worker: int, wait: int, obj: int) -> tuple[str, int]:
        """Why a get, put, receive, join or wait on queues and pipes waits, and the process
        it waits for: the one that put (for a get) or got (for a put) last, if it is still
        there; the processes that still could are named too."""
        board = self.board
        if wait == Wait.ANY:
            first = worker * WAITSET
            entries = board.waitsets.mv[first: first + board.slot(worker, P_ARG)]
            names = [self.object_name(e) if e >= 0 else f"the exit of {self.who(-1 - e)}"
                     for e in entries]
            return f"waits for a message on {' or '.join(names)}", -1
        name, count = self.object_name(obj), board.obj(obj, O_COUNT)
        queue = board.obj(obj, O_KIND) == Kind.QUEUE
        notes = []
        if wait == Wait.ROOM:
            last, verb = board.obj(obj, O_TAKEN_BY), "got from it"
            what = f"waits to put into {name}, which is full"
            notes.append(f"{count} of {board.obj(obj, O_LIMIT)}")
        elif wait == Wait.TASKS_DONE:
            last, verb = board.obj(obj, O_TAKEN_BY), "got from it"
            what = f"waits to join {name}: {board.obj(obj, O_UNFINISHED)} tasks not done"
        elif wait == Wait.FLUSHED:
            last, verb = board.obj(obj, O_TAKEN_BY), "got from it" if queue else "received"
            what = (f"waits for what it {'put into' if queue else 'sent on'} {name} to be "
                    f"read: its OS pipe holds {board.obj(obj, O_PIPE_BYTES):,} bytes, "
                    f"{queued_through(board, obj, worker):,} are queued up to its last")
        else:
            last, verb = board.obj(obj, O_SENT_BY), "put into it" if queue else "sent on it"
            what = (f"waits to get from {name}, which is empty" if queue else
                    f"waits to receive on {name}, where nothing is left")
        who = "the scenario's module" if last == HOST else self.who(last) if last >= 0 else ""
        notes.append(f"{who} {verb} last" if who else f"nothing was ever {verb}")
        if wait == Wait.MESSAGE:
            able = [s for s in range(int(board.globals.mv[G_SLOTS])) if s != worker
                    and board.obj(obj, O_SENDERS) & handle_bit(s)
                    and board.slot(s, P_STATE) not in (State.FINISHED, State.UNUSED)]
            could = (", ".join(self.who(s) for s in able) if able
                     else "no other process left")
            notes.append(f"{could} could {'put' if queue else 'send'}")
            if not queue and board.obj(obj, O_SENDERS) & handle_bit(worker):
                notes[-1] += ", and it has an end that sends into it open itself"
        said = "; ".join(notes)
        ends = board.obj(obj, O_SENDERS if wait == Wait.MESSAGE else O_RECEIVERS)
        holder = last if last >= 0 and last != worker and ends & handle_bit(last) and board.slot(
            last, P_STATE) not in (State.FINISHED, State.UNUSED) else -1
        return f"{what} ({said})", holder

    def _by(self, holder: int) -> str:
        return ("since the scenario's module was imported" if holder == HOST
                else f"by {self.who(holder)}")

    def _site(self, obj: int, holder: int) -> str:
        """Where the holder of ``obj`` took it (``O_SITE``, if that was kept), and where it
        is now: both ends of the holder's part in the wait."""
        board = self.board
        places = []
        site = board.obj(obj, O_SITE)
        taken = self.label(site - 1) if site else None
        if taken is not None and taken.file:
            places.append(f"taken at {taken.file}:{taken.line}")
        if holder >= 0 and board.slot(holder, P_STATE) == State.PARKED:
            now = self.label(board.slot(holder, P_LABEL))
            if now.file:
                places.append(f"{self.who(holder)} is at {now.file}:{now.line}")
        return f" ({'; '.join(places)})" if places else ""

    def _verdict(self, end: PlainEnd, waiting: Sequence[Waiting]) -> tuple[int, str, str]:
        """(first process, one-line message, one line per waiting process)."""
        lines = []
        for w in waiting:
            holds = f" (holds {', '.join(w.held)})" if w.held else ""
            lines.append(f"{self.who(w.worker)}{holds} {w.reason}, at {w.label!r}")
        details = "\n".join(lines)
        if end is PlainEnd.DEADLOCK:
            cycle = _cycle(waiting)
            parts = [f"{self.who(w.worker)} holds {', '.join(w.held) or 'nothing'} and "
                     f"{w.reason.split(', held')[0]}" for w in cycle]
            return cycle[0].worker, "deadlock: " + "; ".join(parts), details
        roots = [w for w in waiting if w.holder < 0] or list(waiting)
        root = roots[0]
        return root.worker, (f"no progress: {self.who(root.worker)} {root.reason}, and no "
                             "process that could end the wait is left running"), details


class _Probing:
    """The probe's hands on a plain session (``controlled.progress.Stepper``). The "state" it
    compares is the count of steps that changed something (``plain.progress.inert``)."""

    def __init__(self, session: PlainSession, current: int) -> None:
        self._session = session
        board = session.board
        self._board = board
        self._current = current
        self.preemptions = 0  # counted as the step loop counts them, as a replay will
        self._locks = frozenset(session.object_name(o) for o in range(_objects(board))
                                if board.obj(o, O_KIND) in (Kind.LOCK, Kind.RLOCK))
        self._changes = 0
        self.hung = -1

    def runnable(self) -> tuple[list[int], bool]:
        board = self._board
        runnable, blocked = [], False
        for slot in range(int(board.globals.mv[G_SLOTS])):
            if board.slot(slot, P_STATE) != State.PARKED:
                continue
            if can_go(board, slot):
                runnable.append(slot)
            else:
                blocked = True
        return runnable, blocked

    def take(self, worker: int) -> None:
        board, session = self._board, self._session
        current = self._current
        if (worker != current and current in self.runnable()[0]
                and not board.slot(current, P_YIELDED)):
            self.preemptions += 1
        self._current = worker
        label = board.slot(worker, P_LABEL)
        if not inert(session.text(label), self._locks):
            self._changes += 1
        board.take_step(label, worker)
        board.set_slot(worker, P_LEASE, 0)
        board.set_slot(worker, P_STATE, State.RUNNING)
        board.globals.mv[G_WAKE] = 0
        board.grants[worker].release()
        if not session._wait(worker):
            self.hung = worker

    def settled(self, worker: int) -> bool:
        return (self.hung >= 0 or self._board.slot(worker, P_STATE) != State.PARKED
                or bool(self._board.globals.mv[G_FAILED]))

    def state(self) -> Hashable:
        return self._changes


_HELD = (Kind.LOCK, Kind.RLOCK, Kind.FILE_LOCK, Kind.RECORD_LOCK)  # what "holds X" names


def _objects(board: Board) -> int:
    return int(board.globals.mv[G_OBJECTS])


def _cycle(waiting: Sequence[Waiting]) -> list[Waiting]:
    """The waiters that wait for each other in a cycle (lock holders and joins), if any."""
    by_worker = {w.worker: w for w in waiting}
    for start in waiting:
        seen: list[Waiting] = []
        current: Waiting | None = start
        while current is not None and current not in seen:
            seen.append(current)
            current = by_worker.get(current.holder)
        if current is not None:
            return seen[seen.index(current):]
    return []


def _decoded(kind: int, word: int) -> object:
    if kind == ValueKind.INT:
        return word
    if kind == ValueKind.BOOL:
        return bool(word)
    if kind == ValueKind.FLOAT:
        return _DOUBLE.unpack(_INT64.pack(word))[0]
    return None


