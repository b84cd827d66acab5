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
from shmstress.plugin.assembly import Assembly, assemble, found_at_rest
from shmstress.plugin.resolve import resolve
from shmstress.plugin.tracker import Found, Role, Tracker


@dataclass
class SequentialRun:
    """A tracker built in this process, with one role object per worker."""

    arena: Arena
    built: Assembly
    roles: list[Role]
    trace: list[tuple[int, str]] = field(default_factory=list)

    @property
    def control(self) -> ControlBlock:
        return self.built.control

    @property
    def runtime(self) -> Runtime:
        return self.built.runtime

    @property
    def tracker(self) -> Tracker:
        return self.built.tracker

    @property
    def workers(self) -> tuple[WorkerInfo, ...]:
        return self.built.workers

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
        """Validated as a run is (``resolve``): a misspelt variant, role or parameter fails
        here in one message, and defaults fill what is not given."""
        config = resolve(RunConfig(tracker=tracker_cls.name, variant=variant,
                                   counts=dict(counts or {}), params=dict(params or {}),
                                   seed=seed), tracker_cls)
        arena = Arena()
        try:
            built = assemble(tracker_cls, variant, config.params, config.counts, arena,
                             stop_on_violation=False)
            roles = []
            for info in built.workers:
                built.runtime.attach(info.worker_id, seed)
                roles.append(built.role(built.tracker, info))
        except BaseException:
            arena.close()
            raise
        run = cls(arena, built, roles)
        built.runtime.rng = worker_rng(seed, -1)  # the scheduler's own draws
        if record:
            built.runtime.sink = lambda seq, worker, label, fields: run.trace.append(
                (worker, label))
        return run

    def set_gate(self, gate: PointGate) -> None:
        self.runtime.gate = gate

    def step(self, worker: int, phase: Phase = Phase.RUN) -> bool:
        """Run one step of ``worker``'s role as that worker; False once it has finished."""
        if self.control.worker_slot(worker, W_STATE) == WorkerState.FINISHED:
            return False
        self.runtime.become(worker)
        seen = self.built.phases(self.workers[worker].role)(phase)
        alive = self.roles[worker].step(seen)
        if not alive:
            self.control.set_worker_slot(worker, W_STATE, WorkerState.FINISHED)
        return alive

    def final_violations(self) -> list[Found]:
        """Every invariant's check at rest, as the coordinator makes them after a run."""
        return found_at_rest(self.built.tracker_cls, self.tracker)

    def run(self, steps: int, settle_steps: int = 100_000) -> list[Found]:
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
        return self.final_violations()

    def close(self) -> None:
        self.arena.close()

    def __enter__(self) -> SequentialRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
