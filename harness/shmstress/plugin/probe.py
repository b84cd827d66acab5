"""Probing a tracker: one variant built in a throwaway arena, its roles stepped in this process.

``probe`` builds the variant through ``assemble`` (as a run would), asks it for
every role, steps the roles one at a time (each seeing the phase its
``stops_after`` allows) and calls ``drained()`` and every ``check_at_rest``.
It catches a role the tracker declares but cannot build, a constructor or step
that raises, a violation of an undeclared invariant or field, and the part of
the point discipline that can be seen from outside:

* a step that writes a tracker array before its first point, or without any
  point (ghost arrays, ``setup.ghost.array``, are oracle bookkeeping and exempt);
* ``drained()`` writing shared state (it must only read);
* with ``strict`` (``shmstress check``; what controlled mode needs beyond free
  mode): a step that never returns because it waits for another worker inside
  itself (more than ``MAX_POINTS_PER_STEP`` points, or the time limit), and a
  step that returns True without making a point, after which a controlled
  coordinator would wait forever.

Not detectable from outside: a read without a point, or a write after a lock
was released but before the next point; those are in the rules of
``examples/README.md``. Every problem is one ``PluginError`` line.
"""

from __future__ import annotations

import contextlib
import random
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import FrameType
from typing import TypeVar

from shmstress.core.control import HARNESS_ARRAYS, W_STATE, ControlBlock, Phase, WorkerState
from shmstress.core.errors import PluginError, ShmstressError
from shmstress.core.runtime import Runtime
from shmstress.core.shm import Arena, SharedArray
from shmstress.core.workers import WorkerInfo, Workers, number_workers
from shmstress.plugin.assembly import Assembly, assemble
from shmstress.plugin.class_check import one_line
from shmstress.plugin.tracker import Found, Invariant, Role, Tracker
from shmstress.record.recorder import Recorder

MAX_POINTS_PER_STEP = 10_000
PROBE_RING_SIZE = 1024  # records per worker while probing: a few steps each need far fewer
_T = TypeVar("_T")


@dataclass(frozen=True)
class ProbeReport:
    """What one probe of one variant did: enough to say a plugin was really exercised."""

    tracker: str
    variant: str
    workers: int
    steps: int
    points: int
    arrays: int
    locks: int
    violations: tuple[str, ...]  # rendered; a probe is sequential, so these are not races
    labels: frozenset[str] = frozenset()  # every point and log label the steps reached


class _Problem(Exception):  # noqa: N818 - internal signal, turned into a PluginError
    """A problem found while probing, already worded for the user."""


class _ProbeRuntime(Runtime):
    """A runtime that refuses violations of undeclared invariants or fields."""

    def violation(self, invariant: str, **fields: int) -> None:
        declared = self._invariant_fields.get(invariant)
        if declared is None:
            raise _Problem(f"reported a violation of undeclared invariant {invariant!r}")
        extra = sorted(set(fields) - set(declared))
        if extra:
            raise _Problem(f"reported {invariant!r} with undeclared field(s) {', '.join(extra)}")
        super().violation(invariant, **fields)


class _TooLong(Exception):  # noqa: N818 - internal signal
    """A step made more than MAX_POINTS_PER_STEP points: it waits inside itself."""


class _DisciplineGate:
    """Sees every point of the probe: counts points per step, catches writes before the first."""

    def __init__(self, arrays: Mapping[str, SharedArray]) -> None:
        self._arrays = arrays
        self._before: dict[str, bytes] = {}
        self.points_in_step = 0

    def start_step(self) -> None:
        self.points_in_step = 0
        self._before = snapshot(self._arrays)

    def changed(self) -> list[str]:
        return changed_arrays(self._before, self._arrays)

    def before_point(self, label: str) -> None:
        self.points_in_step += 1
        if self.points_in_step == 1:
            written = self.changed()
            if written:
                raise _Problem(f"wrote shared array(s) {', '.join(written)} before its first "
                               f"point ({label!r}); take a lock or call point() first")
        elif self.points_in_step > MAX_POINTS_PER_STEP:
            raise _TooLong


def snapshot(arrays: Mapping[str, SharedArray]) -> dict[str, bytes]:
    return {name: array.np.tobytes() for name, array in arrays.items()}


def changed_arrays(before: Mapping[str, bytes], arrays: Mapping[str, SharedArray]) -> list[str]:
    return [name for name, array in arrays.items() if array.np.tobytes() != before[name]]


class _TimeLimit(Exception):  # noqa: N818 - internal signal
    """The probe's time limit struck in the middle of tracker code."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt a step that never returns; only possible in the main thread (SIGALRM)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise _TimeLimit

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def probe(
    tracker_cls: type[Tracker],
    variant: str,
    params: Mapping[str, int],
    counts: Mapping[str, int],
    *,
    steps_per_worker: int = 4,
    phases: Sequence[Phase] = (Phase.RUN,),
    seed: int = 0,
    time_limit_s: float = 10.0,
    strict: bool = False,
    origin: str | None = None,
) -> ProbeReport:
    """Build ``variant`` in a throwaway arena and step its roles one at a time in this process.

    ``params`` and ``counts`` must be complete (as ``config.resolve`` leaves
    them). Raises PluginError with one line on the first problem found.
    ``strict`` adds what controlled mode needs beyond free mode: every step
    returns (within MAX_POINTS_PER_STEP points and the time limit), and a
    step that returns True makes at least one point. Without it such a step
    only ends the stepping early.
    """
    where = origin or f"tracker {tracker_cls.name}"
    arena = Arena()
    context = f"variant {variant!r}"
    try:
        with _time_limit(time_limit_s):
            prober = _Prober(tracker_cls, variant, params, counts, arena, seed, context)
            return prober.report(steps_per_worker, phases, strict, time_limit_s)
    except _TimeLimit:
        raise PluginError(
            f"{where}: {context}: drained() or a check at rest did not return within "
            f"{time_limit_s:g} s"
        ) from None
    except _Problem as problem:
        raise PluginError(f"{where}: {problem}") from None
    finally:
        arena.close()


class _Prober:
    """One probe: a tracker built in a throwaway arena, with one role object per worker."""

    def __init__(
        self,
        tracker_cls: type[Tracker],
        variant: str,
        params: Mapping[str, int],
        counts: Mapping[str, int],
        arena: Arena,
        seed: int,
        context: str,
    ) -> None:
        self.tracker_cls = tracker_cls
        self.variant = variant
        self.params = params
        self.context = context
        # Record as a run does, so a point with a field the ring cannot hold is refused
        # here (exit 2) rather than crashing a worker once the run is under way.
        workers = len(number_workers(tracker_cls.roles, counts))
        self.recorder = Recorder(arena, workers, PROBE_RING_SIZE, PROBE_RING_SIZE)
        before = set(arena.arrays)
        self.assembly: Assembly = _guard(
            partial(assemble, tracker_cls, variant, params, counts, arena,
                    stop_on_violation=False, runtime_type=_ProbeRuntime),
            f"{context}: building the tracker")
        self.control = self.assembly.control
        self.runtime = self.assembly.runtime
        self.runtime.sink = self.recorder.record
        self.runtime.log_sink = self.recorder.log
        self.tracker = self.assembly.tracker
        self.workers = self.assembly.workers
        ghosts = self.assembly.setup.ghost.names
        self.arrays = {name: array for name, array in arena.arrays.items()
                       if name not in before and name not in ghosts
                       and not name.startswith(HARNESS_ARRAYS)}
        self.roles: list[Role] = []
        self.phases = [self.assembly.phases(info.role) for info in self.workers]
        for info in self.workers:
            self.runtime.attach(info.worker_id, seed)
            role_obj = _guard(partial(self.assembly.role, self.tracker, info),
                              f"{context}: building role {info.role!r} #{info.index + 1}")
            if not callable(getattr(role_obj, "step", None)):
                raise _Problem(f"{context}: role {info.role!r} built "
                               f"{type(role_obj).__name__}, which has no step(phase) method")
            self.roles.append(role_obj)
        self.gate = _DisciplineGate(self.arrays)
        self.runtime.gate = self.gate
        self.order = random.Random(f"shmstress-probe:{seed}")

    def report(
        self, steps_per_worker: int, phases: Sequence[Phase], strict: bool, limit_s: float
    ) -> ProbeReport:
        steps = 0
        try:
            for phase in phases:
                self.control.set_phase(phase)
                for _ in range(steps_per_worker * len(self.workers)):
                    alive = [w for w in self.workers if self.control.worker_slot(
                        w.worker_id, W_STATE) != WorkerState.FINISHED]
                    if not alive or (phase is Phase.DRAIN and self.drained()):
                        break
                    self.step(alive[self.order.randrange(len(alive))], phase, strict, limit_s)
                    steps += 1
        except _SteppingEnded:
            pass  # free mode copes with such a step; sequential stepping cannot go on
        self.drained()
        rendered = _rendered_violations(self.tracker_cls, self.tracker, self.control,
                                        self.workers, self.params, self.context)
        return ProbeReport(
            tracker=self.tracker_cls.name, variant=self.variant, workers=len(self.workers),
            steps=steps, points=self.control.points, arrays=len(self.arrays),
            locks=self.control.locks_used, violations=tuple(rendered),
            labels=self.recorder.labels_seen(),
        )

    def step(self, info: WorkerInfo, phase: Phase, strict: bool, limit_s: float) -> None:
        self.runtime.become(info.worker_id)
        self.gate.start_step()
        where = f"{self.context}: {info.describe()} step"
        waits = ("a step must not wait for another worker inside itself: in controlled mode "
                 "one worker runs at a time, so it never returns; return True and retry at "
                 "the next step")
        try:
            seen = self.phases[info.worker_id](phase)
            alive = _guard(partial(self.roles[info.worker_id].step, seen), where)
        except _Problem as problem:
            if str(problem).startswith(self.context):
                raise
            raise _Problem(f"{where} {problem}") from None
        except _TooLong:
            if strict:
                raise _Problem(f"{where} made more than {MAX_POINTS_PER_STEP} points; "
                               f"{waits}") from None
            raise _SteppingEnded from None
        except _TimeLimit:
            if strict:
                raise _Problem(f"{where} did not return within {limit_s:g} s; {waits}") \
                    from None
            raise _SteppingEnded from None
        if self.gate.points_in_step == 0:
            written = self.gate.changed()
            if written:
                raise _Problem(f"{where} wrote shared array(s) {', '.join(written)} without "
                               "any point; take a lock or call point() first")
            if alive and strict:
                raise _Problem(
                    f"{where} returned True without making a point ({phase.name} phase); in "
                    "controlled mode the coordinator waits for the next point forever: make "
                    "one (take a lock) or return False when the role has nothing left to do"
                )
        if not alive:
            self.control.set_worker_slot(info.worker_id, W_STATE, WorkerState.FINISHED)

    def drained(self) -> bool:
        return _drained(self.tracker, self.arrays, self.context)


class _SteppingEnded(Exception):  # noqa: N818 - internal signal
    """A step did not return in time; outside strict mode the probe just stops stepping."""


def _guard(action: Callable[[], _T], what: str) -> _T:
    """Run tracker code; its exception becomes one line saying where it came from."""
    try:
        return action()
    except (ShmstressError, _Problem, _TimeLimit, _TooLong):
        raise
    except Exception as exc:
        raise _Problem(f"{what} raised {one_line(exc)}") from exc


def _drained(tracker: Tracker, arrays: Mapping[str, SharedArray], context: str) -> bool:
    before = snapshot(arrays)
    settled = _guard(tracker.drained, f"{context}: drained()")
    written = changed_arrays(before, arrays)
    if written:
        raise _Problem(f"{context}: drained() wrote shared array(s) {', '.join(written)}; "
                       "it runs in the coordinator and must only read")
    if not isinstance(settled, bool):
        raise _Problem(f"{context}: drained() must return a bool, got {type(settled).__name__}")
    return settled


def _rendered_violations(
    tracker_cls: type[Tracker],
    tracker: Tracker,
    control: ControlBlock,
    workers: Sequence[WorkerInfo],
    params: Mapping[str, int],
    context: str,
) -> list[str]:
    """Every violation the probe saw, online or from a check at rest, rendered once."""
    invariants = list(tracker_cls.invariants)
    found: list[tuple[Invariant, Mapping[str, int]]] = []
    for record in control.violation_records():
        invariant = invariants[record.invariant]
        found.append((invariant, dict(zip(invariant.fields, record.fields, strict=False))))
    by_name = {inv.name: inv for inv in invariants}
    for invariant in invariants:
        at_rest = _guard(partial(invariant.check_at_rest, tracker),
                         f"{context}: invariant {invariant.name!r} check_at_rest()")
        if not isinstance(at_rest, list):
            raise _Problem(f"{context}: invariant {invariant.name!r} check_at_rest() must "
                           f"return a list, got {type(at_rest).__name__}")
        for item in at_rest:
            if not isinstance(item, Found) or item.invariant not in by_name:
                raise _Problem(f"{context}: invariant {invariant.name!r} check_at_rest() must "
                               f"return Found items of declared invariants, got {item!r}")
            found.append((by_name[item.invariant], item.fields))
    rendered = []
    for invariant, fields in found:
        try:
            text = invariant.render(fields, Workers(workers), params)
        except Exception as exc:
            raise _Problem(f"{context}: invariant {invariant.name!r} render() raised "
                           f"{one_line(exc)} for fields {dict(fields)}") from exc
        rendered.append(text)
    return rendered
