"""What an instrumented primitive calls: one point per operation, the object table, names.

One ``PlainRuntime`` is built by the coordinator before it forks the host and
is inherited by every process of every execution; each process then says which
slot it is (``become``). In the host, outside any execution (the scenario's
module being imported), the slot is ``NOBODY`` and operations happen at once,
with no point: nothing else runs there.
"""

from __future__ import annotations

import ast
import ctypes
import linecache
import os
import random
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType

from shmstress.core.errors import PlainLimitError
from shmstress.core.shm import CreatedSegments
from shmstress.plain.board import (
    G_ABORT,
    G_FAIL_STEP,
    G_FAILED,
    G_HOST_SEGMENTS,
    G_LIMIT,
    G_NAMES,
    G_OBJECTS,
    G_SEED,
    G_SEGMENTS,
    G_SLOTS,
    G_STEP,
    G_WAKE,
    MAX_NAMES,
    MAX_SEGMENTS,
    N_LABEL,
    N_OS,
    N_STRIDE,
    NOBODY,
    O_FAMILY,
    O_KIND,
    O_NAME,
    O_OWNER,
    O_STRIDE,
    P_ARG,
    P_COND,
    P_EXITCODE,
    P_FAMILY,
    P_HANDING_OFF,
    P_LABEL,
    P_LEASE,
    P_NAME,
    P_OBJ,
    P_PID,
    P_STATE,
    P_STRIDE,
    P_TIMED,
    P_WAIT,
    P_WOKEN_BY,
    P_YIELDED,
    S_NAME,
    S_STRIDE,
    S_UNLINKED,
    Board,
    Kind,
    State,
    ValueKind,
    Wait,
)
from shmstress.plain.selfcheck import SelfCheck, writes
from shmstress.plain.waits import another_can_go, wait_over
from shmstress.record.recorder import Recorder

PLUMBING = True
"""Point plumbing: a point's call site is the first frame outside such modules."""

_ASSIGNED = re.compile(r"^\s*(?:self\.)?([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")
_INT64 = (-(1 << 63), (1 << 63) - 1)
_REAL_SLEEP = time.sleep  # the scenario's processes get a sleep that is a point instead
_HAND_OFF_S = 0.02  # free mode: the longest a hand-off waits, whatever the others do
_HAND_OFF_POLL_S = 0.00005
_CAN_GO_EVERY = 20  # ... and it asks whether another process can go every 20 polls (1 ms)
_REAL_YIELD = os.sched_yield
_LIBRARY = ("multiprocessing", "concurrent.futures")
_AS_MANY_AS_THEY_CAN = 1 << 62


class Abort(BaseException):
    """The execution is over (a failure elsewhere, a deadlock, the step bound): unwind."""


def plumbing(frame: FrameType) -> bool:
    """Is ``frame`` shmstress's own or ``multiprocessing``'s (or ``concurrent.futures``',
    whose executor and futures are made of it), not the program's?"""
    return (frame.f_globals.get("PLUMBING") is True
            or str(frame.f_globals.get("__name__", "")).startswith(_LIBRARY))


def _user_frame(frame: FrameType | None) -> FrameType | None:
    """The first frame outside the plumbing and outside ``multiprocessing`` itself (and
    ``concurrent.futures``, whose executor and futures are made of it)."""
    while frame is not None and plumbing(frame):
        frame = frame.f_back
    return frame


@dataclass
class Manifest:
    """Shared buffers created outside any execution: restored before each execution."""

    buffers: list[tuple[int, int]] = field(default_factory=list)  # (address, size)
    saved: list[bytes] = field(default_factory=list)

    def add(self, address: int, size: int) -> None:
        self.buffers.append((address, size))

    def snapshot(self) -> None:
        self.saved = [ctypes.string_at(address, size) for address, size in self.buffers]

    def restore(self) -> None:
        for (address, size), data in zip(self.buffers, self.saved, strict=True):
            ctypes.memmove(address, data, size)


class FreeNoise:
    """Free mode's perturbation: at a point, with probability ``probability``, let the
    other processes have the step lock for a yield or a short sleep; a waiter backs off
    longer the longer it waits. Drawn from the process's own RNG (not the program's)."""

    def __init__(self, probability: float, max_sleep_s: float) -> None:
        self.probability = probability
        self.max_sleep_s = max_sleep_s
        self._rng = random.Random(0)

    def seed(self, execution_seed: int, slot: int) -> None:
        self._rng = random.Random(f"shmstress:noise:{execution_seed}:{slot}")

    def noise(self) -> bool:
        return bool(self.probability) and self._rng.random() < self.probability

    def backoff_s(self, backoff: int) -> float:
        """How long a waiter waits before it looks again (unless woken): longer the longer
        it has waited."""
        return min(self.max_sleep_s * backoff, 0.001)

    def hand_off_steps(self) -> int:
        """How many steps the others take in a hand-off before this process goes on: one
        in half of them, two to eight in a quarter, and in the last quarter as many as they
        can (until none of them can go): a process the OS leaves off its CPU for long, as
        rr's chaos mode does. One step was too short to let a process being started
        overtake one started before it (a notify before the wait that misses it: found in 1
        of 200 executions on a quiet machine, none of 400 with the CPUs busy)."""
        draw = self._rng.random()
        if draw < 0.5:
            return 1
        if draw < 0.75:
            return self._rng.randint(2, 8)
        return _AS_MANY_AS_THEY_CAN

    def hands_off(self) -> bool:
        """Is this pause a hand-off (wait for another process's step) rather than a yield or
        a short sleep? Half of them are: a sleep of up to ``max_sleep_s`` rarely lets the
        other process in before this one goes on, a hand-off always does when one can go
        (measured, 40 executions each: the read-modify-write of a dict over an mmap under a
        file lock failed 3 times with sleeps alone, 13-14 with half of them hand-offs; a
        declared lock's 4 and 14; a manager's dict and the counter within their noise)."""
        return self._rng.random() < 0.5

    def wakes_late(self) -> bool:
        """Does a process whose wait a step just ended let a third process go first? The OS
        runs a woken process only once a CPU is free for it, so with the CPUs busy a third
        process that wants the same thing (a second client on a shared pipe end) often
        takes it first. As likely as a wait at a door. Measured at load 24 on two CPUs, 40
        executions of each, the pipe's answer went to the wrong client in 10 and 13 free
        executions against a plain loop's 11 and 17 without this; 15, 10, 15 and 18 against
        17, 10, 11 and 12 with it. Only a third process goes first, never the waker: a woken
        process that let its waker go on too missed the race where the waker's own next
        write is what the woken must not miss (a task farm: 16 against a plain loop's 29).
        """
        return self.at_door()

    def at_door(self) -> bool:
        """Wait at a library's door? Five times as likely as noise at a point (at most
        always): a door is rarer than a point, and the only place a window with no point
        inside can be widened (measured on a read-modify-write inside a library: p 0.1 at
        doors found it in 4% of executions, as a plain loop did; 0.5, in 13%)."""
        return bool(self.probability) and self._rng.random() < min(1.0, 5 * self.probability)

    def pause(self, backoff: int) -> None:
        if backoff:
            _REAL_SLEEP(self.backoff_s(backoff))
        elif self._rng.random() < 0.5:
            _REAL_YIELD()
        else:
            _REAL_SLEEP(self._rng.random() * self.max_sleep_s)


class PlainRuntime:
    """This process's handle on the board: its slot, its lease, and the string table."""

    def __init__(self, board: Board, recorder: Recorder,
                 created: CreatedSegments | None = None) -> None:
        self.board = board
        self.recorder = recorder
        self.created = created  # the run's list of the segments the scenario created
        self.slot = NOBODY
        self.lease = 0
        self.yielded = 0
        self.manifest = Manifest()
        self.free: FreeNoise | None = None  # free mode: no coordinator, a step lock
        self.holding = False  # free mode: this process holds the step lock
        self.woke = False  # free mode: a step of this process woke a waiter
        self.last_step = -1  # free mode: the step this process took last
        self.shared_ranges: list[tuple[int, int]] = []  # [start, end) of shared buffers here
        self.tracer: Callable[[], None] | None = None  # installs tracing in this process
        self.exposed = False  # shared memory ordinary code can subscript exists here
        self.tracing = False  # the tracer is installed in this process
        self.check: SelfCheck | None = None  # the self-check, when it is on
        self._sites: dict[tuple[int, int, str], int] = {}
        self._writing: dict[int, bool] = {}  # site id -> its step may write shared memory
        self._globals = board.globals.mv
        self._slots = board.slots.mv

    @property
    def scheduled(self) -> bool:
        """Inside an execution (every operation is a point), not in the host."""
        return self.slot != NOBODY

    # -- points ---------------------------------------------------------------------------
    def point(
        self, text: str, wait: Wait = Wait.NOTHING, obj: int = NOBODY, arg: int = 0,
        timeout: float | None = None,
    ) -> int:
        """Take one step ``text``, once what it waits for is there (or, with a ``timeout``,
        when it runs out: in controlled mode whenever the strategy says so); returns the
        step's index, -1 outside an execution."""
        slot = self.slot
        if slot == NOBODY:
            return -1
        globals_ = self._globals
        if globals_[G_ABORT]:
            raise self._aborted()
        ident = self._site_id(text)
        check = self.check
        if check is not None:
            writing = self._writing.get(ident)
            if writing is None:
                writing = self._writing[ident] = writes(text)
            check.at_point(slot, ident, writing)
        if self.free is not None:
            return self._free_step(ident, wait, obj, arg, timeout)
        timed = timeout is not None
        board = self.board
        if (self.lease and not self.yielded and not globals_[G_WAKE]
                and wait_over(board, slot, wait, obj, arg)):
            self.lease -= 1
            return board.take_step(ident, slot, time.monotonic_ns())
        slots = self._slots
        base = slot * P_STRIDE
        slots[base + P_LABEL] = ident
        slots[base + P_WAIT] = wait
        slots[base + P_OBJ] = obj
        slots[base + P_ARG] = arg
        slots[base + P_TIMED] = int(timed)
        slots[base + P_YIELDED] = self.yielded
        self.yielded = 0
        slots[base + P_STATE] = State.PARKED
        board.report.release()
        self._granted()
        return int(globals_[G_STEP]) - 1

    # -- free mode ------------------------------------------------------------------------
    def _free_step(self, ident: int, wait: int, obj: int, arg: int,
                   timeout: float | None) -> int:
        """Free mode: a process holds the board's step lock from one of its points to the
        next, so the code between two points runs alone and the step order recorded is
        the order in which shared state really changed: a replay takes the same steps and
        sees the same values. Which process gets the lock next is up to the OS (and the
        noise); one whose wait is not over lets go and backs off."""
        free = self.free
        assert free is not None
        board = self.board
        globals_ = self._globals
        slot = self.slot
        base = slot * P_STRIDE
        slots = self._slots
        self._let_go(free.noise() or self.woke)
        self.woke = False
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        backoff = 0
        while True:
            if not self.holding:
                board.step_lock.acquire()
                self.holding = True
            if globals_[G_ABORT]:
                raise self._aborted()
            if wait_over(board, slot, wait, obj, arg) or (
                    deadline is not None and time.monotonic() >= deadline):
                waker = int(slots[base + P_WOKEN_BY])
                slots[base + P_WOKEN_BY] = NOBODY
                if (waker != NOBODY and free.wakes_late()
                        and another_can_go(board, slot, besides=waker)):
                    self._let_go(False)  # once: its wait may be over no longer, and it parks
                    self._hand_off(free.hand_off_steps(), besides=waker)
                    continue
                slots[base + P_STATE] = State.RUNNING
                if globals_[G_STEP] >= board.max_steps:
                    globals_[G_ABORT] = 1  # the coordinator reports the step bound
                    raise self._aborted()
                self.last_step = board.take_step(ident, slot, time.monotonic_ns())
                return self.last_step
            slots[base + P_LABEL] = ident  # what it waits for, for the coordinator to see
            slots[base + P_WAIT] = wait
            slots[base + P_OBJ] = obj
            slots[base + P_ARG] = arg
            slots[base + P_TIMED] = int(deadline is not None)  # it will go on: not stuck
            slots[base + P_STATE] = State.PARKED
            self._let_go(False)
            # backs off, unless a step that may end the wait wakes it first (``wake``): a
            # real waiter on a semaphore or a pipe is woken at once, not when it looks
            board.grants[slot].acquire(True, free.backoff_s(backoff + 1))
            backoff = min(backoff + 1, 10)

    def step_done(self) -> None:
        """Free mode: the access the last step stands for is over (the program's own code
        runs again): let the others in. Code between two points then runs beside theirs,
        as in a plain run, so a race inside code with no point (a library call) can
        happen; only the steps themselves are ordered by the step lock."""
        if self.holding:
            self.holding = False
            self.board.step_lock.release()

    def at_library_door(self) -> None:
        """Free mode's noise where there is no point: at a call into code that takes none
        (a library's), now and then let another process take a step first (outside the
        step lock), so that its code runs while this one is inside the library, where a
        plain run overlaps them only by luck."""
        free = self.free
        if free is None or not free.at_door():
            return
        self._hand_off(1)

    def _hand_off(self, steps: int, besides: int = NOBODY) -> None:
        """Free mode: wait, not holding the step lock, until the other processes have taken
        ``steps`` steps, or none of them (but ``besides``) can take one (each finished,
        waiting for something not there, or handing off too), or ``_HAND_OFF_S`` passed.
        Waiting for the others rather than for a fixed time keeps a hand-off a hand-off when
        the CPUs are busy: a process being started may need several milliseconds to take its
        first step."""
        if self.slot < 0:
            return  # not a process of the execution (the host, at import)
        globals_ = self._globals
        board = self.board
        handing_off = self.slot * P_STRIDE + P_HANDING_OFF
        until = globals_[G_STEP] + steps
        deadline = time.monotonic() + _HAND_OFF_S
        self._slots[handing_off] = 1
        try:
            polls = 0
            while (globals_[G_STEP] < until and not globals_[G_ABORT]
                   and time.monotonic() < deadline):
                if (polls % _CAN_GO_EVERY == 0
                        and not another_can_go(board, self.slot, besides)):
                    return
                polls += 1
                _REAL_SLEEP(_HAND_OFF_POLL_S)
        finally:
            self._slots[handing_off] = 0

    def ran_loose(self) -> None:
        """Free mode: after its last step, this process ran code that takes no points,
        outside the step lock: the replay cannot promise where it ran among the steps."""
        if self.last_step >= 0:
            self.board.step_loose.mv[self.last_step] = 1

    def _let_go(self, pause: bool, backoff: int = 0) -> None:
        """Free mode: release the step lock (and, asked to, give the CPU away a while)."""
        if self.holding:
            self.holding = False
            self.board.step_lock.release()
        if pause and self.free is not None:
            if backoff == 0 and self.free.hands_off():
                self._hand_off(self.free.hand_off_steps())
            else:
                self.free.pause(backoff)

    def _granted(self) -> None:
        self.board.grants[self.slot].acquire()
        if self._globals[G_ABORT]:
            raise self._aborted()
        self.board.step_time.mv[self._globals[G_STEP] - 1] = time.monotonic_ns()
        self.lease = int(self._slots[self.slot * P_STRIDE + P_LEASE])

    def _aborted(self) -> Abort:
        """The execution is over: this process unwinds, and what it prints on the way out
        (the traceback ``multiprocessing`` prints for an exception in ``run``) is noise."""
        self._let_go(False)
        if sys.stderr is not None and not getattr(sys.stderr, "_shm_silenced", False):
            silenced = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
            silenced._shm_silenced = True  # type: ignore[attr-defined]
            sys.stderr = silenced
        return Abort()

    def note(self, step: int, value: object, index: int = -1) -> None:
        """What step ``step`` read or wrote (and at which index of an array)."""
        if step < 0:
            return
        if self.check is not None and self.check.wrote:  # the write is done
            self.check.settle()
        board = self.board
        kind, word = ValueKind.ABSENT, 0
        if isinstance(value, bool):
            kind, word = ValueKind.BOOL, int(value)
        elif isinstance(value, int) and _INT64[0] <= value <= _INT64[1]:
            kind, word = ValueKind.INT, value
        elif isinstance(value, float):
            kind = ValueKind.FLOAT
            word = int.from_bytes(ctypes.c_double(value), sys.byteorder, signed=True)
        board.step_kind.mv[step] = kind
        board.step_value.mv[step] = word
        board.step_index.mv[step] = index

    def wake(self) -> None:
        """A release, set or notify happened: if a parked process waits for something, it
        may be able to go on now, so the lease ends at the next point and the strategy
        sees the choice. With nobody waiting, the lease goes on (no handoff)."""
        if self.slot == NOBODY:
            return
        slots = self._slots
        for other in range(int(self._globals[G_SLOTS])):
            base = other * P_STRIDE
            if (other != self.slot and slots[base + P_STATE] == State.PARKED
                    and slots[base + P_WAIT] != Wait.NOTHING):
                self._globals[G_WAKE] = 1
                if self.free is None:
                    return
                # free mode: the waiter looks again now, and this process lets go of the
                # step lock at its next point, so the two race as they would for real
                slots[base + P_WOKEN_BY] = self.slot
                self.board.grants[other].release()
                self.woke = True

    def pause(self, text: str) -> None:
        """A sleep or a yield: a point at which the process says it waits for others."""
        self.yielded = 1
        self.point(text)
        self._let_go(True)

    def uncontrolled_thread(self, name: str) -> None:
        """The process starts a thread: the self-check's gap, at the caller's line."""
        if self.check is not None:
            self.check.thread_started(self.slot, name, self._site_id(f"start thread {name}"))

    def _site_id(self, text: str) -> int:
        frame = _user_frame(sys._getframe(2))
        if frame is None:
            return self.recorder.intern_at(text, "", 0)
        code = frame.f_code
        key = (id(code), frame.f_lasti, text)
        found = self._sites.get(key)
        if found is None:
            found = self._sites[key] = self.recorder.intern_at(
                text, os.path.basename(code.co_filename), frame.f_lineno)
        return found

    def name_of(self, ident: int) -> str:
        return self.recorder.label(ident).text

    # -- objects and processes ------------------------------------------------------------
    def new_object(self, kind: Kind, word: str, name: str | None = None) -> tuple[int, str]:
        """A new row of the object table, named ``name`` or after the variable the caller
        assigns it to (``counter = Value(...)`` is "counter"); returns (row, name)."""
        globals_ = self._globals
        obj = int(globals_[G_OBJECTS])
        if obj >= self.board.max_objects:
            raise PlainLimitError(f"the scenario created more than {self.board.max_objects} "
                                  "locks, values and other shared objects")
        base_name = name or inferred_name(_user_frame(sys._getframe(1)), word)
        family = self.recorder.intern(base_name)
        objects = self.board.objects.mv
        same = sum(1 for other in range(obj) if objects[other * O_STRIDE + O_FAMILY] == family)
        name = base_name if not same else f"{base_name}#{same + 1}"
        objects[obj * O_STRIDE: (obj + 1) * O_STRIDE] = memoryview(
            bytes(O_STRIDE * 8)).cast("q")
        objects[obj * O_STRIDE + O_KIND] = kind
        objects[obj * O_STRIDE + O_NAME] = self.recorder.intern(name)
        objects[obj * O_STRIDE + O_FAMILY] = family
        objects[obj * O_STRIDE + O_OWNER] = NOBODY
        globals_[G_OBJECTS] = obj + 1
        return obj, name

    def known_as(self, os_name: str, word: str, made: bool = False) -> tuple[int, str]:
        """What the steps call an object the OS knows by ``os_name`` (a segment): the name
        given where the run first met that name, else a new one from the caller's variable
        (``inferred_name``). An OS name may hold a pid or a random part, which differ in a
        replay; the name a schedule uses must not, so an object is known by where the run
        made (or first met) it, and every process that opens the same OS name later uses
        the same name (numbered apart by ``new_object`` as any other repeat).

        Also returns the object's entry in the table (-1 when the table is full), which is
        the object's identity (the self-check's checksum is kept by it): ``made``, the OS
        object is a new one, though its name may be an old one's (a segment unlinked and
        created again under its name: whoever still maps the old one maps other memory),
        so it gets an entry of its own, under the name the old one had."""
        names = self.board.names.mv
        ident = self.recorder.intern(os_name)
        count = int(self._globals[G_NAMES])
        label = ""
        for index in range(count - 1, -1, -1):  # the latest object of that name
            if names[index * N_STRIDE + N_OS] == ident:
                label = self.name_of(int(names[index * N_STRIDE + N_LABEL]))
                if not made:
                    return index, label
                break
        label = label or inferred_name(_user_frame(sys._getframe(1)), word)
        if count >= MAX_NAMES:  # past it, an OS name met again is named afresh
            return -1, label
        names[count * N_STRIDE + N_OS] = ident
        names[count * N_STRIDE + N_LABEL] = self.recorder.intern(label)
        self._globals[G_NAMES] = count + 1
        return count, label

    def new_slot(self, word: str) -> tuple[int, str]:
        """The slot of a process about to be started, parked at its first point."""
        globals_ = self._globals
        slot = int(globals_[G_SLOTS])
        board = self.board
        if slot >= board.max_slots:
            most = board.max_slots - 1
            raise PlainLimitError(f"the scenario started more than {most} process"
                                  f"{'es' if most != 1 else ''}, the most --max-processes "
                                  "allows (max_processes= of concurrency_test): raise it")
        family = self.recorder.intern(word)
        slots = self._slots
        same = sum(1 for other in range(slot) if slots[other * P_STRIDE + P_FAMILY] == family)
        name = f"{word} #{same + 1}"
        self.claim_slot(slot, name, family)
        board.inherit(self.slot, slot)  # the queue and pipe ends open here, as a fork's
        globals_[G_SLOTS] = slot + 1
        globals_[G_WAKE] = 1  # one more process to choose from
        return slot, name

    def claim_slot(self, slot: int, name: str, family: int) -> None:
        base = slot * P_STRIDE
        slots = self._slots
        slots[base: base + P_STRIDE] = memoryview(bytes(P_STRIDE * 8)).cast("q")
        slots[base + P_NAME] = self.recorder.intern(name)
        slots[base + P_FAMILY] = family
        slots[base + P_OBJ] = NOBODY
        slots[base + P_COND] = NOBODY
        slots[base + P_WOKEN_BY] = NOBODY
        slots[base + P_LABEL] = self.recorder.intern_at(f"begin {name}", "", 0)
        slots[base + P_STATE] = State.PARKED

    def become(self, slot: int) -> None:
        """First thing in a forked process of the execution: take ``slot`` and wait to be
        scheduled. Its ``random`` is seeded from (execution seed, slot), so a replay draws
        what the run drew."""
        self.slot = slot
        self.lease = 0
        self.yielded = 0
        self._slots[slot * P_STRIDE + P_PID] = os.getpid()
        random.seed(f"shmstress:{int(self._globals[G_SEED])}:{slot}")
        if self.free is not None:
            self.holding = False  # a forked child does not hold its parent's step lock
            self.woke = False
            self.free.seed(int(self._globals[G_SEED]), slot)
            self._free_step(int(self._slots[slot * P_STRIDE + P_LABEL]), Wait.NOTHING,
                            NOBODY, 0, None)
        else:
            self._granted()
        self.tracing = False  # a process starts untraced; its parent's settrace is gone
        if self.exposed:
            self.expose()

    def fail(self, text: str, limit: bool = False) -> None:
        """The process raised: the execution's failure (the first one counts); ``limit``: what
        it raised was a limit of the board (``PlainLimitError``), which ends the search as a
        limit, not as a bug of the scenario."""
        globals_ = self._globals
        if not globals_[G_FAILED] and not globals_[G_ABORT]:
            self.board.write_failure(text)
            globals_[G_FAIL_STEP] = globals_[G_STEP]
            globals_[G_LIMIT] = limit
            globals_[G_FAILED] = self.slot + 1

    def finish(self, exitcode: int) -> None:
        """The process is done: joiners may go on; the coordinator hears of it."""
        if self.slot == NOBODY:
            return
        if self.check is not None and not self._globals[G_ABORT]:
            self.check.at_end(self.slot, self.shared_ranges)
        base = self.slot * P_STRIDE
        self._slots[base + P_EXITCODE] = exitcode
        self._slots[base + P_STATE] = State.FINISHED
        self._globals[G_WAKE] = 1
        if self.free is not None:
            self._let_go(False)  # the coordinator polls in free mode
        else:
            self.board.report.release()

    # -- shared memory ------------------------------------------------------------------------
    def expose(self) -> None:
        r"""Ordinary code can now reach shared memory through a buffer (a segment, a raw
        ``Array``, an ``mmap``): from here on, in this process and the ones it starts,
        the traced code's subscripts and lines that use such memory are points. Tracing
        costs every call a trace hook (a quarter to a half of the steps/s), so code that
        shares only ``Value``\ s and locks, whose every access is a point already, is
        not traced at all."""
        self.exposed = True
        if self.scheduled and not self.tracing and self.tracer is not None:
            self.tracing = True
            self.tracer()

    def register_buffer(self, address: int, size: int, memory: int = -1,
                        name: str = "", exposed: bool = True) -> None:
        """A shared buffer mapped in this process (and in the processes it forks after).
        ``memory`` is where the self-check keeps its checksum (``memory_of``), the same in
        every process that maps it; -1: it is not checked. ``exposed``: ordinary code
        reaches it by subscript (not a ``Value``, whose accesses are points themselves)."""
        if exposed:
            self.expose()
        self.shared_ranges.append((address, address + size))
        if not self.scheduled:
            self.manifest.add(address, size)
        if self.check is not None:
            self.check.watch(address, size, memory, name)

    def unregister_buffer(self, address: int) -> None:
        """The buffer at ``address`` is unmapped here: no longer shared, nor checked."""
        self.shared_ranges = [r for r in self.shared_ranges if r[0] != address]
        if self.check is not None:
            self.check.forget(address)

    def memory_of(self, obj: int = NOBODY, name: int = -1) -> int:
        """Where the checksum of a buffer lives: by its object row (a ``Value``, made once
        and inherited), or by its entry in the name table (a segment every process opens
        by name)."""
        if name >= 0:
            return self.board.max_objects + name
        return obj

    def is_shared(self, start: int, end: int) -> bool:
        return any(start < high and low < end for low, high in self.shared_ranges)

    def created_segment(self, name: str) -> None:
        """A named segment the scenario created: unlinked after the execution (after the
        session, if created at import) unless the scenario unlinks it itself."""
        globals_ = self._globals
        count = int(globals_[G_SEGMENTS])
        if count >= MAX_SEGMENTS:
            raise PlainLimitError(f"the scenario created more than {MAX_SEGMENTS} shared "
                                  "memory segments")
        segments = self.board.segments.mv
        segments[count * S_STRIDE + S_NAME] = self.recorder.intern(name)
        segments[count * S_STRIDE + S_UNLINKED] = 0
        globals_[G_SEGMENTS] = count + 1
        if not self.scheduled:
            globals_[G_HOST_SEGMENTS] = count + 1
        if self.created is not None:
            self.created.created(name)

    def unlinked_segment(self, name: str) -> None:
        if self.created is not None:
            self.created.unlinked(name)
        ident = self.recorder.intern(name)
        segments = self.board.segments.mv
        for index in range(int(self._globals[G_SEGMENTS])):
            if segments[index * S_STRIDE + S_NAME] == ident:
                segments[index * S_STRIDE + S_UNLINKED] = 1

    def segments_left(self, since: int) -> list[str]:
        """Names of the segments created from table entry ``since`` on, not unlinked."""
        segments = self.board.segments.mv
        return [self.name_of(int(segments[index * S_STRIDE + S_NAME]))
                for index in range(since, int(self._globals[G_SEGMENTS]))
                if not segments[index * S_STRIDE + S_UNLINKED]]

    def kind_of(self, obj: int) -> Kind:
        return Kind(self.board.objects.mv[obj * O_STRIDE + O_KIND])


def inferred_name(frame: FrameType | None, word: str) -> str:
    """The variable a new object is assigned to on its creation line (``lock = Lock()``, or
    its place in ``first, second = Lock(), Lock()``), else ``word`` and the line
    (``lock@counter.py:12``)."""
    if frame is None:
        return word
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    match = _ASSIGNED.match(line)
    if match:
        return match.group(1)
    unpacked = _unpacked_name(frame, line)
    if unpacked is not None:
        return unpacked
    return f"{word}@{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def _unpacked_name(frame: FrameType, line: str) -> str | None:
    """In ``first, second = Lock(), Lock()`` on one line, the target in the place of the
    call ``frame`` is making: its columns (the instruction's position) fall inside one
    element of the right-hand side. Two objects made on one line were named by that line
    alone (``lock@names.py:12`` and ``lock@names.py:12#2``), and an explanation of a race
    between two locks could not say which was which."""
    positions = list(frame.f_code.co_positions())
    index = frame.f_lasti // 2  # a code unit is two bytes
    if not 0 <= index < len(positions):
        return None
    start_line, _, column, _ = positions[index]
    if start_line != frame.f_lineno or column is None:
        return None
    indent = len(line) - len(line.lstrip())
    try:
        statement = ast.parse(line.strip()).body[0]
    except (SyntaxError, IndexError, ValueError):
        return None  # a statement over several lines: its line alone names it
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return None
    targets, values = statement.targets[0], statement.value
    if not (isinstance(targets, ast.Tuple | ast.List) and isinstance(values, ast.Tuple | ast.List)
            and len(targets.elts) == len(values.elts)):
        return None
    for target, value in zip(targets.elts, values.elts, strict=True):
        end = value.end_col_offset
        if value.col_offset <= column - indent < (end if end is not None else -1):
            if isinstance(target, ast.Name):
                return target.id
            if isinstance(target, ast.Attribute):  # self.lock
                return target.attr
            return None
    return None
