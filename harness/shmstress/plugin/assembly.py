"""The one place a tracker is built for a run: its control block, runtime, workers and roles.

Free runs, controlled sessions, probes and sequential tests all build a tracker
here, so they number workers alike (a bundle's recorded steps name the same
workers wherever it replays), hold the same limits, and hand every role the
phase its ``stops_after`` allows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from shmstress.core.control import (
    MAX_LOCKS,
    W_STATE,
    W_STRIDE,
    ControlBlock,
    Phase,
    WorkerState,
)
from shmstress.core.errors import PluginError
from shmstress.core.runtime import Runtime
from shmstress.core.shm import Arena
from shmstress.core.workers import WorkerInfo, number_workers
from shmstress.plugin.setup import Setup
from shmstress.plugin.tracker import Found, Role, Tracker


@dataclass
class Assembly:
    """A tracker built in an arena, with what runs it."""

    tracker_cls: type[Tracker]
    control: ControlBlock
    runtime: Runtime
    setup: Setup
    tracker: Tracker
    workers: tuple[WorkerInfo, ...]

    def role(self, tracker: Tracker, worker: WorkerInfo) -> Role:
        """The role object of ``worker``, built from ``tracker`` (the worker's own copy)."""
        return self.tracker_cls.roles[worker.role].build(tracker, worker.index)

    def phases(self, role: str) -> Callable[[int], Phase]:
        """The phase ``role``'s steps see, given the run's: STOP only once every worker of
        the roles it stops after has finished; until then DRAIN."""
        waits_for = [w.worker_id for w in self.workers
                     if w.role in self.tracker_cls.roles[role].stops_after]
        by_value = tuple(Phase)  # Phase(raw) costs half a microsecond; an index does not
        assert all(p == i for i, p in enumerate(by_value))
        if not waits_for:
            return by_value.__getitem__
        states = self.control.workers.mv  # read directly: every step of STOP asks
        cells = [w * W_STRIDE + W_STATE for w in waits_for]
        stop, drain, finished = Phase.STOP, Phase.DRAIN, int(WorkerState.FINISHED)

        def phase(raw: int) -> Phase:
            if raw == stop:
                for cell in cells:
                    if states[cell] < finished:
                        return drain
            return by_value[raw]

        return phase


def assemble(
    tracker_cls: type[Tracker],
    variant: str,
    params: Mapping[str, int],
    counts: Mapping[str, int],
    arena: Arena,
    *,
    max_violations: int = 64,
    stop_on_violation: bool = True,
    checks: Sequence[str] | None = None,
    runtime_type: type[Runtime] = Runtime,
) -> Assembly:
    """Build ``variant`` of ``tracker_cls`` in ``arena`` (``params`` and ``counts`` complete,
    as ``resolve`` leaves them); the caller wires recording sinks and forks the workers."""
    workers = number_workers(tracker_cls.roles, counts)
    control = ControlBlock(arena, len(workers), max_violations, MAX_LOCKS)
    invariants = tracker_cls.invariants
    runtime = runtime_type(control, [inv.name for inv in invariants], stop_on_violation, checks)
    for invariant in invariants:
        runtime.declare_invariant_fields(invariant.name, invariant.fields)
    checked = frozenset(inv.name for inv in invariants) if checks is None else frozenset(checks)
    setup = Setup(arena, runtime, workers, checked)
    tracker = tracker_cls(setup, variant, params)
    return Assembly(tracker_cls, control, runtime, setup, tracker, workers)


def found_at_rest(tracker_cls: type[Tracker], tracker: Tracker) -> list[Found]:
    """Every invariant's ``check_at_rest`` on ``tracker``, guarded: a check that raises is a
    malformed tracker (one line, exit 2), not a violation found."""
    found: list[Found] = []
    for invariant in tracker_cls.invariants:
        try:
            found += invariant.check_at_rest(tracker)
        except Exception as exc:
            raise PluginError(
                f"tracker {tracker_cls.name}: invariant {invariant.name!r} check_at_rest() "
                f"raised {type(exc).__name__}: {exc}"
            ) from exc
    return found


def reset(built: Assembly) -> None:
    """The tracker's ``reset()`` before a controlled execution, guarded like every hook."""
    _hook(built, "reset")


def teardown(built: Assembly) -> None:
    """The tracker's ``teardown()`` once the workers are gone, guarded like every hook."""
    _hook(built, "teardown")


def _hook(built: Assembly, name: str) -> None:
    try:
        getattr(built.tracker, name)()
    except Exception as exc:
        raise PluginError(f"tracker {built.tracker_cls.name}: {name}() raised "
                          f"{type(exc).__name__}: {exc}") from exc
