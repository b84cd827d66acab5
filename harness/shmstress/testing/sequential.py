"""Sequential runs: every role of a tracker stepped in one process, in a seeded order.

No parallelism, so no race is found here by timing; what it gives is a fully
deterministic trace for a seed (the same seed must give the same trace), a
quick way to unit-test a tracker's roles, and a scaffold for tests that
inject a hand-written interleaving through a gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from shmstress.core.config import RunConfig
from shmstress.core.control import W_STATE, ControlBlock, Phase, WorkerState
from shmstress.core.points import PointGate
from shmstress.core.runtime import Runtime, worker_rng
from shmstress.core.shm import Arena
from shmstress.core.workers import WorkerInfo
from shmstress.plugin.protocol import FoundViolation, Role, Tracker
from shmstress.plugin.resolve import resolve


@dataclass
class SequentialRun:
    """A tracker built in this process, with one role object per worker."""

    arena: Arena
    control: ControlBlock
    runtime: Runtime
    tracker: Tracker
    workers: list[WorkerInfo]
    roles: list[Role]
    trace: list[tuple[int, str]] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        tracker_cls: type[Tracker],
        variant: str,
        params: Mapping[str, int] | None = None,
        counts: Mapping[str, int] | None = None,
        seed: int = 0,
        record: bool = True,
    ) -> SequentialRun:
        """Validated as a run is (``harness.config.resolve``): a misspelt variant, role or
        parameter fails here in one message, and defaults fill what is not given."""
        config = resolve(RunConfig(tracker=tracker_cls.name, variant=variant,
                                   counts=dict(counts or {}), params=dict(params or {}),
                                   seed=seed), tracker_cls)
        workers = [
            WorkerInfo(i, role, index)
            for i, (role, index) in enumerate(
                (role, index) for role in tracker_cls.roles
                for index in range(config.counts[role])
            )
        ]
        arena = Arena()
        try:
            control = ControlBlock(arena, len(workers), 64, 64)
            runtime = Runtime(control, [inv.name for inv in tracker_cls.invariants], False)
            for invariant in tracker_cls.invariants:
                runtime.declare_invariant_fields(invariant.name, invariant.fields)
            runtime.role_workers = {
                role: tuple(w.worker_id for w in workers if w.role == role)
                for role in tracker_cls.roles
            }
            tracker = tracker_cls(runtime, arena, variant, config.params)
            roles = []
            for info in workers:
                runtime.attach(info.worker_id, seed)
                roles.append(tracker.role(info.role, info.index))
        except BaseException:
            arena.close()
            raise
        run = cls(arena, control, runtime, tracker, workers, roles)
        runtime.rng = worker_rng(seed, -1)  # the scheduler's own draws
        if record:
            runtime.sink = lambda seq, worker, label, fields: run.trace.append((worker, label))
        return run

    def set_gate(self, gate: PointGate) -> None:
        self.runtime.gate = gate

    def step(self, worker: int, phase: Phase = Phase.RUN) -> bool:
        """Run one step of ``worker``'s role as that worker; False once it has finished."""
        if self.control.worker_slot(worker, W_STATE) == WorkerState.FINISHED:
            return False
        self.runtime.become(worker)
        alive = self.roles[worker].step(phase)
        if not alive:
            self.control.set_worker_slot(worker, W_STATE, WorkerState.FINISHED)
        return alive

    def run(self, steps: int, settle_steps: int = 100_000) -> list[FoundViolation]:
        """``steps`` random steps, then settle and stop in seeded order; violations at rest."""
        order = worker_rng(int(self.runtime.rng.random() * 2**32), -2)
        for _ in range(steps):
            self.step(order.randrange(len(self.roles)))
        self.control.set_phase(Phase.DRAIN)
        for _ in range(settle_steps):
            if self.tracker.drained():
                break
            self.step(order.randrange(len(self.roles)))
        self.control.set_phase(Phase.STOP)
        for _ in range(settle_steps):
            alive = [
                w for w in range(len(self.roles))
                if self.control.worker_slot(w, W_STATE) != WorkerState.FINISHED
            ]
            if not alive:
                break
            self.step(alive[order.randrange(len(alive))], Phase.STOP)
        return self.tracker.final_violations()

    def close(self) -> None:
        self.arena.close()

    def __enter__(self) -> SequentialRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
