"""Random walk: at every point, any runnable worker, uniformly.

The baseline every other strategy is measured against; it preempts at
almost every step, so it finds shallow races in few steps and deep orderings
(a worker preempted exactly once, at the right point) rarely.
"""

from __future__ import annotations

from shmstress.controlled.strategies.base import SchedulerView, StrategySpec, seeded_rng


class RandomWalk:
    def __init__(self, seed: int) -> None:
        self._rng = seeded_rng(seed, "random_walk")
        self.spec = StrategySpec("random_walk")

    def new_execution(self) -> bool:
        return True

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        runnable = view.runnable
        return runnable[self._rng.randrange(len(runnable))], 1

    def next_u64(self) -> int:
        return self._rng.getrandbits(64)
