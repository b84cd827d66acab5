"""What tracker code calls: ``point()``, instrumented locks, and violation reports.

One ``Runtime`` is built by the coordinator before the fork; each forked
worker then ``attach``es its own identity and gate to its copy. Keeping the
worker's identity in this object, not in a module global, lets a sequential
test drive several roles in one process by re-attaching.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from multiprocessing import util
from multiprocessing.synchronize import Lock as MpLock

from shmstress.core.control import ControlBlock
from shmstress.core.locks import InstrumentedLock
from shmstress.core.noise import NoiseConfig, NoiseGate
from shmstress.core.points import AcquireGate, LogSink, PointGate, PointSink

PLUMBING = True
"""Point plumbing: the recorder looks past this module's frames for a call site."""

NO_ID = -1
"""The int that names no object (no device, no claim): what a violation's missing field
arrives as, and what trackers store where an id is absent. Not Python's ``None``: shared
arrays and violation fields hold ints only."""


_STEP_LOCK_SLICE_S = 0.05
_START_POLL_S = 0.0002


class StopRun(BaseException):
    """Unwinds a worker at its next point after the run was aborted; held locks release."""


_LOG_LEVELS = {"I": 0, "W": 1, "E": 2}


class _NoGate:
    def before_point(self, label: str) -> None:
        return None


def worker_rng(seed: int, worker: int) -> random.Random:
    """Each worker's RNG derives from (run seed, worker id), so one seed fixes every draw."""
    return random.Random(f"shmstress:{seed}:{worker}")


class Runtime:
    """The per-process handle a tracker uses to reach the harness."""

    def __init__(
        self,
        control: ControlBlock,
        invariant_names: Sequence[str] = (),
        stop_on_violation: bool = True,
        checked: Sequence[str] | None = None,
    ) -> None:
        self.control = control
        self.worker_id = -1
        self.rng = random.Random(0)
        self.gate: PointGate = _NoGate()
        self.acquire_gate: AcquireGate | None = None
        self.acquire_hook: Callable[[str, int], None] | None = None
        """Set, it replaces ``before_acquire`` whole, its abort check included: controlled
        mode's gate, which runs one worker at a time and holds no step lock, so nothing else
        of ``before_acquire`` applies, and an outer acquire saves a call."""
        self.sink: PointSink | None = None
        self.log_sink: LogSink | None = None
        self.observer: PointSink | None = None  # free mode's aimed noise: sees every point
        self.last_seq = -1
        self.points = 0
        self._invariant_index = {name: i for i, name in enumerate(invariant_names)}
        self._invariant_fields: dict[str, tuple[str, ...]] = {}
        self._stop_on_violation = stop_on_violation
        self._checked = frozenset(invariant_names if checked is None else checked)
        self._abort_mv = control.control.mv
        # Controlled mode runs one worker at a time (each handed the step through a
        # semaphore, which orders memory): the sequence number then needs no lock of its own.
        self.one_at_a_time = False
        self._step_lock: MpLock | None = None  # free mode: see ``attach``
        self._holding = False
        self._before_first_point = False  # free mode: see ``attach``
        self._yield_at_next_point = False  # free mode: see ``idle``
        self.gate_holds = False
        """The gate runs under the step lock and lets go itself before it pauses (free mode's
        aimed noise): a point without a pause then gives no other worker a chance to take the
        lock, as it gives none without noise."""

    # -- identity -------------------------------------------------------------------------
    def attach(self, worker_id: int, seed: int, noise: NoiseConfig | None = None,
               alone: bool = False) -> None:
        """Become worker ``worker_id``: its RNG, its gate, its counters.

        ``alone`` (a free run's worker): hold the run's step lock from each point to the
        next, so the code between two points runs alone. The sequence numbers then order
        the accesses as they really happened, and a replay that takes the recorded steps
        in order sees the values the run saw. Which worker gets the lock next is up to the
        OS and the noise (the gate runs with the lock let go). No worker takes its first
        point before every worker has reached its own (``arrive_at_start``): what a role
        does before its first point (look at a queue, to choose between "get" and "wait")
        then sees the state it sees in a replay, where every worker runs to its first
        point before the first step is granted. Without it, a worker started late read
        what the others had already done, and its bundle diverged on replay."""
        self.end_step()
        self.worker_id = worker_id
        self.rng = worker_rng(seed, worker_id)
        self.gate = NoiseGate(noise, self.rng) if noise and noise.draws_from_worker_rng else (
            _NoGate())
        self.acquire_gate = None
        self.acquire_hook = None
        self.observer = None
        if alone and self._step_lock is None:
            self._step_lock = self.control.step_lock
            self._before_first_point = True
            util.Finalize(self, self.end_step, exitpriority=100)  # an exiting worker lets go

    def arrive_at_start(self, wait: bool = True) -> None:
        """Free mode: count this worker as at its first point and, with ``wait``, wait for
        every other one to be at its own, or past it (a worker ending before its first
        point arrives without waiting)."""
        if not self._before_first_point:
            return
        self._before_first_point = False
        control = self.control
        control.arrive()
        while wait and not control.everyone_arrived:
            if self._abort_mv[2]:  # the run ended before every worker started
                raise StopRun
            time.sleep(_START_POLL_S)

    def end_step(self) -> None:
        """Let go of the step lock (free mode): at a point, when idle, and at exit."""
        if self._holding:
            self._holding = False
            assert self._step_lock is not None
            self._step_lock.release()

    def _begin_step(self) -> None:
        lock = self._step_lock
        assert lock is not None
        while not lock.acquire(True, _STEP_LOCK_SLICE_S):
            if self._abort_mv[2]:  # the run ended while another worker held it
                raise StopRun
        self._holding = True

    def become(self, worker_id: int) -> None:
        """Switch identity only (sequential runs drive several roles from one process)."""
        self.worker_id = worker_id

    def declare_invariant_fields(self, name: str, fields: tuple[str, ...]) -> None:
        self._invariant_fields[name] = fields

    # -- points ---------------------------------------------------------------------------
    def lock(self, name: str) -> InstrumentedLock:
        """A lock whose acquire is a point; create every lock before workers start."""
        slot = self.control.allocate_lock_slot()
        return InstrumentedLock(self, self.control.lock_table, name, slot)

    def before_point(self, label: str) -> None:
        """Abort check and gate: the part of a point that runs before the step."""
        if self._before_first_point:
            self.arrive_at_start()
        if self.gate_holds:
            self._gate_then_let_go(label, -1)
            return
        if self._holding:
            self._let_go_at_point()
        if self._abort_mv[2]:  # control.ABORT, inlined: this runs at every point
            raise StopRun
        self.gate.before_point(label)

    def before_acquire(self, label: str, lock: int) -> None:
        """``before_point`` for the outer acquire of instrumented lock slot ``lock``: the
        acquire that follows may block, so the step lock is let go first (after a gate that
        holds it)."""
        if self._before_first_point:
            self.arrive_at_start()
        if self.gate_holds:
            self._gate_then_let_go(label, lock)
            return
        if self._holding:
            self._let_go_at_point()
        if self._abort_mv[2]:
            raise StopRun
        if self.acquire_gate is None:
            self.gate.before_point(label)
        else:
            self.acquire_gate.before_acquire(label, lock)

    def _gate_then_let_go(self, label: str, lock: int) -> None:
        """``gate_holds``: the gate decides under the step lock (letting go itself to pause),
        then the lock is let go for the point's own acquire, which may block."""
        if self._abort_mv[2]:
            self.end_step()
            raise StopRun
        if lock >= 0 and self.acquire_gate is not None:
            self.acquire_gate.before_acquire(label, lock)
        else:
            self.gate.before_point(label)
        self._let_go_at_point()

    def _let_go_at_point(self) -> None:
        """End the step at a point (free mode), yielding if the step was idle (``idle``)."""
        self.end_step()
        if self._yield_at_next_point:
            self._yield_at_next_point = False
            os.sched_yield()

    def commit_point(self, label: str, fields: dict[str, object]) -> int:
        """Take the global sequence number (inside the lock just acquired, if any) and record."""
        if self._step_lock is not None and not self._holding:
            self._begin_step()
        if self.one_at_a_time:
            control = self._abort_mv
            seq = control[0]  # control.SEQ
            control[0] = seq + 1
        else:
            seq = self.control.next_seq()
        self.last_seq = seq
        self.points += 1
        if self.sink is not None:
            self.sink(seq, self.worker_id, label, fields)
        if self.observer is not None:
            self.observer(seq, self.worker_id, label, fields)
        return seq

    def point(self, label: str, **fields: object) -> int:
        """Mark a step that touches shared state without a lock; returns its sequence number."""
        self.before_point(label)
        return self.commit_point(label, fields)

    def idle(self) -> bool:
        """What a step returns when its role has nothing to do yet: yield, then go on.

        The yield is the rule for controlled mode: there one worker runs at a
        time, and PCT keeps running the highest-priority worker until it yields,
        so a role that spins without yielding starves the worker it waits for
        until the execution hits ``--max-steps``. In free mode the worker yields
        at its next point, once it has let go of the step lock there: the code up
        to that point (the next step's look at what it waits for) still runs
        alone, as it does in a replay, where it runs right after the worker's
        last granted point. Yielding here, with the lock let go, let that code
        read what others did after the worker's last point, and the bundle
        diverged on replay. The step must still have made a point (the read that
        found nothing to do).
        """
        if self._holding:  # free mode: the others go at this worker's next point
            self._yield_at_next_point = True
            return True
        os.sched_yield()  # looked up at call time: controlled workers replace it with a hint
        return True

    def log(self, message: str, level: str = "I", **fields: object) -> None:
        """A log line that is not a point: no scheduling decision, no sequence number.

        For what a step saw rather than did (upstream logs each in-flight device
        it ranges over): it is recorded after the worker's last point, so a replay
        need not match it, and costs nothing when recording is off.
        """
        if self.log_sink is not None:
            self.log_sink(self.last_seq, self.worker_id, message, _LOG_LEVELS[level], fields)

    # -- violations -----------------------------------------------------------------------
    def violation(self, invariant: str, **fields: int) -> None:
        """Report a broken invariant from inside a worker; may stop the run at once."""
        if invariant not in self._checked:
            return
        names = self._invariant_fields.get(invariant, tuple(fields))
        values = tuple(int(fields.get(name, NO_ID)) for name in names)
        self.control.record_violation(
            self._invariant_index[invariant],
            max(self.last_seq, 0),
            self.worker_id,
            values,
            self._stop_on_violation,
        )
