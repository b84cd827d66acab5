"""PCT, probabilistic concurrency testing with bug depth ``d``.

Burckhardt, Kothari, Musuvathi and Nagarakatte, "A Randomized Scheduler with
Probabilistic Guarantees of Finding Bugs", ASPLOS 2010. Each execution gives
the n workers distinct random priorities d .. d+n-1 and picks d-1 change
points among the k steps; the highest-priority runnable worker always runs,
and at a change point the running worker drops below the others. A bug that
needs d ordering constraints is then found with probability at least
1/(n·k^(d-1)) per execution.

As in Shuttle's and Coyote's implementations, a dropped worker goes below
every priority handed out so far (the paper gives the i-th change point
priority i), and k is not known in advance: it is the longest execution seen
so far (the first execution uses the run-phase length). A worker that yields
(``os.sched_yield``: it is spinning, waiting for someone else) drops the same
way, as Shuttle's PCT does for ``yield_now``; otherwise a spinning
high-priority worker would starve the one it waits for.
"""

from __future__ import annotations

from harness.strategies.base import UNLIMITED, SchedulerView, StrategySpec, seeded_rng


class Pct:
    def __init__(self, seed: int, depth: int, workers: int, expected_steps: int) -> None:
        if depth < 1:
            raise ValueError("PCT depth must be >= 1")
        self._rng = seeded_rng(seed, "pct")
        self._depth = depth
        self._workers = workers
        self._longest = max(1, expected_steps)
        self._priority: list[int] = []
        self._changes: list[int] = []
        self._next_change = 0
        self._lowest = 0
        self.spec = StrategySpec("pct", depth=depth)

    def new_execution(self) -> bool:
        rng = self._rng
        order = list(range(self._depth, self._depth + self._workers))
        rng.shuffle(order)
        self._priority = order
        k = self._longest
        count = self._depth - 1
        points = rng.sample(range(1, k + 1), count) if count <= k else [rng.randint(1, k)
                                                                       for _ in range(count)]
        self._changes = sorted(points)
        self._next_change = 0
        self._lowest = 0
        return True

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        step = view.step
        self._longest = max(self._longest, step + 1)
        priority = self._priority
        current = view.current
        changes = self._changes
        while self._next_change < len(changes) and changes[self._next_change] <= step:
            self._next_change += 1
            if current >= 0:
                self._lowest -= 1  # a change point: below every other worker
                priority[current] = self._lowest
        if current >= 0 and not view.current_can_continue and current in view.runnable:
            self._lowest -= 1  # it yielded
            priority[current] = self._lowest
        chosen = max(view.runnable, key=priority.__getitem__)
        if self._next_change < len(changes):
            return chosen, max(1, changes[self._next_change] - step)
        return chosen, UNLIMITED

    def next_u64(self) -> int:
        return self._rng.getrandbits(64)
