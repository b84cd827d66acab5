"""Validating a tracker class before any worker is forked, so a malformed plugin fails in one line.

Two checks, both raising ``PluginError`` with one line that names the tracker
and what to fix:

- ``check_class``: the class attributes the harness reads (names, variants,
  roles, counts, parameters, invariants with their fields and ``render``) and
  the methods it calls. Every invariant is rendered with sample fields (all
  zero, all one, distinct small values), so a ``render`` that raises or
  prints several lines is caught here, not after a long run.
- ``probe``: builds one instance of a variant in a throwaway arena, asks it
  for every role, steps the roles one at a time in this process and calls
  ``drained()`` and ``final_violations()``. It catches a role the tracker
  declares but cannot build, a constructor or step that raises, a violation
  of an undeclared invariant or field, and the part of the point discipline
  that can be seen from outside:

  * a step that writes a tracker array before its first point, or without
    any point (arrays with a ``ghost`` name component, e.g.
    ``mytracker.ghost.since``, are oracle bookkeeping and exempt);
  * ``drained()`` writing shared state (it must only read);
  * with ``strict`` (``shmstress check``; what controlled mode needs beyond
    free mode): a step that never returns because it waits for another
    worker inside itself (more than ``MAX_POINTS_PER_STEP`` points, or the
    time limit), and a step that returns True without making a point, after
    which a controlled coordinator would wait forever.

  Not detectable from outside: a read without a point, or a write after a
  lock was released but before the next point; those are in the rules of
  ``examples/README.md``.
"""

from __future__ import annotations

import contextlib
import inspect
import random
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import FrameType
from typing import TypeVar, cast

from shmstress.core.control import MAX_VIOLATION_FIELDS, W_STATE, ControlBlock, Phase, WorkerState
from shmstress.core.errors import PluginError, ShmstressError
from shmstress.core.runtime import Runtime
from shmstress.core.shm import Arena, SharedArray
from shmstress.core.workers import WorkerInfo
from shmstress.plugin.protocol import FoundViolation, Invariant, Parameter, Role, Tracker
from shmstress.record.recorder import Recorder

MAX_POINTS_PER_STEP = 10_000
PROBE_MAX_LOCKS = 64  # the runner's limit: a probe must fail where a run would
PROBE_RING_SIZE = 1024  # records per worker while probing: a few steps each need far fewer
_SAMPLE_PID = 4242
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


class _Problem(Exception):  # noqa: N818 - internal signal, turned into a PluginError
    """A problem found while probing, already worded for the user."""


# -- static checks --------------------------------------------------------------------------
def check_class(candidate: object, origin: str) -> type[Tracker]:
    """``candidate`` as a tracker class, or a PluginError naming every problem in one line."""
    if not inspect.isclass(candidate):
        raise PluginError(f"{origin}: expected a tracker class, got {type(candidate).__name__}")
    problems = class_problems(candidate)
    if problems:
        raise PluginError(f"{origin}: " + "; ".join(problems))
    return cast(type[Tracker], candidate)


def class_problems(cls: type) -> list[str]:
    """Every problem with the class attributes and methods the harness relies on."""
    problems: list[str] = []
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        problems.append(f"name must be a non-empty string without spaces, got {name!r}")
    if not isinstance(getattr(cls, "summary", None), str):
        problems.append("summary must be a string (one line for `shmstress list`)")
    problems += _named_texts(cls, "variants")
    problems += _named_texts(cls, "roles")
    roles = getattr(cls, "roles", None)
    role_names = set(roles) if isinstance(roles, Mapping) else set()
    problems += _role_name_problems(role_names)
    problems += _count_problems(getattr(cls, "default_counts", None), role_names)
    problems += _parameter_problems(getattr(cls, "parameters", None))
    problems += _invariant_problems(getattr(cls, "invariants", None), cls)
    for method in ("role", "drained", "final_violations"):
        if not callable(getattr(cls, method, None)):
            problems.append(f"method {method}() is missing")
    try:
        inspect.signature(cls).bind("runtime", "arena", "variant", {})
    except (TypeError, ValueError):
        problems.append("__init__ must accept (runtime, arena, variant, params)")
    return problems


def _named_texts(cls: type, attribute: str) -> list[str]:
    value = getattr(cls, attribute, None)
    if not isinstance(value, Mapping) or not value:
        return [f"{attribute} must be a non-empty mapping of name to description"]
    bad = [k for k, v in value.items() if not (isinstance(k, str) and k and isinstance(v, str))]
    return [f"{attribute} entries must be non-empty name -> description strings: {bad!r}"] if bad \
        else []


def _role_name_problems(role_names: set[str]) -> list[str]:
    bad = sorted(r for r in role_names
                 if isinstance(r, str) and any(c in r for c in "=, \t"))
    return [f"role names must not contain '=', ',' or spaces: {', '.join(bad)}"] if bad else []


def _count_problems(counts: object, role_names: set[str]) -> list[str]:
    if not isinstance(counts, Mapping):
        return ["default_counts must be a mapping of role to worker count"]
    problems = []
    unknown = sorted(set(counts) - role_names)
    if unknown:
        problems.append(f"default_counts names unknown role {', '.join(map(str, unknown))}")
    bad = [f"{role}={n!r}" for role, n in counts.items()
           if not isinstance(n, int) or isinstance(n, bool) or n < 1]
    if bad:
        problems.append(f"default_counts must be integers >= 1: {', '.join(bad)}")
    return problems


def _parameter_problems(parameters: object) -> list[str]:
    if not isinstance(parameters, Mapping):
        return ["parameters must be a mapping of name to harness.Parameter"]
    problems = []
    for pname, param in parameters.items():
        if not isinstance(param, Parameter):
            problems.append(f"parameter {pname!r} must be a harness.Parameter, got "
                            f"{type(param).__name__}")
            continue
        problem = param.problem(str(pname), param.default)
        if problem:
            problems.append(f"default of parameter {problem}")
    return problems


def _invariant_problems(invariants: object, cls: type) -> list[str]:
    if not isinstance(invariants, Sequence) or isinstance(invariants, str) or not invariants:
        return ["invariants must be a non-empty sequence of invariant objects"]
    problems: list[str] = []
    seen: set[str] = set()
    for position, invariant in enumerate(invariants):
        name = getattr(invariant, "name", None)
        label = repr(name) if isinstance(name, str) else f"#{position + 1}"
        if not isinstance(invariant, Invariant):
            problems.append(f"invariant {label} needs name, summary, fields and render()")
            continue
        if not isinstance(name, str) or not name:
            problems.append(f"invariant {label} has no name")
        elif name in seen:
            problems.append(f"invariant {name!r} is declared twice")
        else:
            seen.add(name)
        if not isinstance(getattr(invariant, "summary", None), str):
            problems.append(f"invariant {label} summary must be a string")
        fields: object = getattr(invariant, "fields", None)
        if not isinstance(fields, tuple) or not all(isinstance(f, str) for f in fields):
            problems.append(f"invariant {label} fields must be a tuple of names")
        elif len(fields) > MAX_VIOLATION_FIELDS:
            problems.append(f"invariant {label} has {len(fields)} fields; at most "
                            f"{MAX_VIOLATION_FIELDS} are kept")
        else:
            problem = next((found for sample in sample_fields(fields)
                            if (found := render_problem(invariant, sample, cls))), None)
            if problem:
                problems.append(problem)
    return problems


def sample_fields(fields: tuple[str, ...]) -> list[dict[str, int]]:
    """Fields every ``render`` must word: all zero, all one, and distinct small values, so a
    render that only copes with zeros (a worker id past the list, a kind it forgot) fails
    here rather than after a long run."""
    return [dict.fromkeys(fields, 0), dict.fromkeys(fields, 1),
            {name: position + 1 for position, name in enumerate(fields)}]


def render_problem(invariant: Invariant, fields: Mapping[str, int], cls: type) -> str | None:
    """Why ``invariant.render`` cannot word these fields, or None when it gives one line."""
    try:
        text = invariant.render(fields, sample_workers(cls), default_params(cls))
    except Exception as exc:
        return (f"invariant {invariant.name!r} render() raised {one_line(exc)} "
                f"for fields {dict(fields)}")
    if not isinstance(text, str) or not text.strip():
        return f"invariant {invariant.name!r} render() must return a non-empty string"
    if "\n" in text:
        return f"invariant {invariant.name!r} render() must return one line, got {text!r}"
    return None


def sample_workers(cls: type) -> list[WorkerInfo]:
    """One worker per role, as a run with default counts would number them."""
    roles = getattr(cls, "roles", {})
    counts = getattr(cls, "default_counts", {})
    workers: list[WorkerInfo] = []
    for role in roles:
        for index in range(max(1, int(counts.get(role, 1)))):
            workers.append(WorkerInfo(len(workers), role, index, _SAMPLE_PID + len(workers)))
    return workers


def default_params(cls: type) -> dict[str, int]:
    parameters = getattr(cls, "parameters", {})
    return {n: p.default for n, p in parameters.items() if isinstance(p, Parameter)}


def one_line(exc: BaseException) -> str:
    """An exception as `Type: first line of its message`, for one-line errors."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


# -- the probe ------------------------------------------------------------------------------
class _ProbeRuntime(Runtime):
    """A runtime that refuses violations of undeclared invariants or fields."""

    def __init__(self, control: ControlBlock, invariants: Sequence[Invariant]) -> None:
        super().__init__(control, [inv.name for inv in invariants], stop_on_violation=False)
        self._declared = {inv.name: set(inv.fields) for inv in invariants}
        for invariant in invariants:
            self.declare_invariant_fields(invariant.name, invariant.fields)

    def violation(self, invariant: str, **fields: int) -> None:
        declared = self._declared.get(invariant)
        if declared is None:
            raise _Problem(f"reported a violation of undeclared invariant {invariant!r}")
        extra = sorted(set(fields) - declared)
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


def _is_ghost(name: str) -> bool:
    return "ghost" in name.split(".")


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
            f"{where}: {context}: drained() or final_violations() did not return within "
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
        self.workers: list[WorkerInfo] = []
        for role in tracker_cls.roles:
            for index in range(counts.get(role, 1)):
                self.workers.append(WorkerInfo(len(self.workers), role, index))
        self.control = ControlBlock(arena, len(self.workers), 64, PROBE_MAX_LOCKS)
        # Record as a run does, so a point with a field the ring cannot hold is refused
        # here (exit 2) rather than crashing a worker once the run is under way.
        recorder = Recorder(arena, len(self.workers), PROBE_RING_SIZE, PROBE_RING_SIZE)
        harness_arrays = set(arena.arrays)
        self.runtime = _ProbeRuntime(self.control, tracker_cls.invariants)
        self.runtime.sink = recorder.record
        self.runtime.log_sink = recorder.log
        self.runtime.role_workers = {
            role: tuple(w.worker_id for w in self.workers if w.role == role)
            for role in tracker_cls.roles
        }
        self.tracker = _guard(partial(tracker_cls, self.runtime, arena, variant, params),
                              f"{context}: building the tracker")
        self.arrays = {name: a for name, a in arena.arrays.items()
                       if name not in harness_arrays and not _is_ghost(name)}
        self.roles: list[Role] = []
        for info in self.workers:
            self.runtime.attach(info.worker_id, seed)
            role_obj = _guard(partial(self.tracker.role, info.role, info.index),
                              f"{context}: role({info.role!r}, {info.index})")
            if not callable(getattr(role_obj, "step", None)):
                raise _Problem(f"{context}: role({info.role!r}, {info.index}) returned "
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
        )

    def step(self, info: WorkerInfo, phase: Phase, strict: bool, limit_s: float) -> None:
        self.runtime.become(info.worker_id)
        self.gate.start_step()
        where = f"{self.context}: {info.describe()} step"
        waits = ("a step must not wait for another worker inside itself: in controlled mode "
                 "one worker runs at a time, so it never returns; return True and retry at "
                 "the next step")
        try:
            alive = _guard(partial(self.roles[info.worker_id].step, phase), where)
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
    """Every violation the probe saw, online or from final_violations(), rendered once."""
    invariants = list(tracker_cls.invariants)
    found: list[tuple[Invariant, Mapping[str, int]]] = []
    for record in control.violation_records():
        invariant = invariants[record.invariant]
        found.append((invariant, dict(zip(invariant.fields, record.fields, strict=False))))
    at_rest = _guard(tracker.final_violations, f"{context}: final_violations()")
    if not isinstance(at_rest, list):
        raise _Problem(f"{context}: final_violations() must return a list, got "
                       f"{type(at_rest).__name__}")
    by_name = {inv.name: inv for inv in invariants}
    for item in at_rest:
        if not isinstance(item, FoundViolation) or item.invariant not in by_name:
            raise _Problem(f"{context}: final_violations() must return FoundViolation items of "
                           f"declared invariants, got {item!r}")
        found.append((by_name[item.invariant], item.fields))
    rendered = []
    for invariant, fields in found:
        try:
            text = invariant.render(fields, workers, params)
        except Exception as exc:
            raise _Problem(f"{context}: invariant {invariant.name!r} render() raised "
                           f"{one_line(exc)} for fields {dict(fields)}") from exc
        rendered.append(text)
    return rendered
