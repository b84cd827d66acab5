"""PCT, probabilistic concurrency testing with bug depth ``d``.

Burckhardt, Kothari, Musuvathi and Nagarakatte, "A Randomized Scheduler with
Probabilistic Guarantees of Finding Bugs", ASPLOS 2010. Each execution gives
the n workers distinct random priorities and picks d-1 change points among
the k steps of the execution; the highest-priority enabled worker always
runs, and at a change point the running worker drops below the others. A
bug that needs d ordering constraints is then found with probability at
least 1/(n·k^(d-1)) per execution.

k: the paper needs k to bound the length of the execution; a change point
placed beyond its end is lost, one placed in too large a range is merely
rarer. The first execution therefore uses the step bound every execution
obeys (``--max-steps``); every later one uses the longest execution seen so
far, measured to the last step where two workers could run (a change point
after it changes nothing), as Coyote and Shuttle learn k. A dropped worker
goes below every priority handed out so far, as in their implementations
(the paper gives the i-th change point priority i).

Spinning: a worker that calls ``os.sched_yield`` is waiting for another one
to change something. The paper has no rule for it (its threads block); two
are on offer (``--spin``), and neither wins everywhere:

- ``demote`` (default), Shuttle's rule for ``yield_now``: the spinner drops
  below every other worker. Executions stay short and leases long, so PCT
  runs near the ping-pong ceiling and finds the seed race (``gather-unchecked``)
  in a few dozen executions.
- ``aside``: the spinner keeps its priority and steps aside until another
  worker takes a step that is not a spin of its own, then competes again;
  while it outranks the chosen worker, that one is granted one step at a
  time, so the spinner looks again after each. This is how the paper treats
  a thread that cannot run. Under ``demote`` a spinner never sees another
  worker's update at once, and spinners sink below a worker dropped at a
  change point, which then runs again before the others get past the window
  it was preempted in. The DRA tracker's ``events-unordered`` needs both (a
  spinning worker sees another's update before that one stores it, is preempted
  between popping its event and delivering it, and a third worker runs a whole
  operation meanwhile): measured on it, ``demote`` found it in 0 of 10
  runs of 1000 executions, ``aside`` in 9 of 10 (median 48). The price:
  executions take more steps and handoffs (fixed variant: 576 steps instead
  of 243, 30% of the ping-pong instead of 76%), and the seed race needs
  about six times as many executions.
"""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.controlled.strategies.base import (
    UNLIMITED,
    SchedulerView,
    SearchSpace,
    Strategy,
    StrategySpec,
    require,
    seeded_rng,
)
from shmstress.core.errors import ConfigError

SPIN_RULES = ("demote", "aside")
DEFAULT_SPIN = "demote"


@dataclass(frozen=True)
class PctSpec(StrategySpec):
    """PCT with its bug depth and spin rule."""

    name = "pct"
    searches = True
    flags = ("depth", "spin")
    depth: int = 3
    spin: str = DEFAULT_SPIN

    def __post_init__(self) -> None:
        require("depth", self.depth, 1)
        if self.spin not in SPIN_RULES:
            raise ConfigError(f"--spin must be one of {', '.join(SPIN_RULES)}, got {self.spin}")

    def describe(self) -> str:
        aside = ", spinners step aside" if self.spin == "aside" else ""
        return f"pct (depth {self.depth}{aside})"

    def short(self) -> str:
        return f"pct depth {self.depth}" + (f" {self.spin}" if self.spin != DEFAULT_SPIN else "")

    def options(self) -> list[str]:
        """``--spin`` only when it is not the default, as a user types it."""
        chosen = ["--strategy", self.name, "--depth", str(self.depth)]
        return chosen + (["--spin", self.spin] if self.spin != DEFAULT_SPIN else [])

    def build(self, seed: int, space: SearchSpace) -> Strategy:
        return Pct(seed, self.depth, space.workers, space.max_steps, self.spin)


class Pct:
    def __init__(
        self, seed: int, depth: int, workers: int, max_steps: int, spin: str = DEFAULT_SPIN
    ) -> None:
        self.spec = PctSpec(depth=depth, spin=spin)  # checks them
        self._demote = spin == DEFAULT_SPIN
        self._rng = seeded_rng(seed, "pct")
        self._depth = depth
        self._workers = workers
        self._max_steps = max(1, max_steps)
        self._longest = 0  # 1 + the last step with a choice, over every execution so far
        self._others_waited = False  # the last grant left another worker waiting
        self._priority: list[int] = []
        self._changes: list[int] = []
        self._next_change = 0
        self._lowest = 0
        self._aside: set[int] = set()  # spinners waiting for another worker to progress

    @property
    def k(self) -> int:
        """The number of steps the next execution's change points are drawn from."""
        return self._longest or self._max_steps

    def new_execution(self) -> bool:
        rng = self._rng
        order = list(range(self._depth, self._depth + self._workers))
        rng.shuffle(order)
        self._priority = order
        k = self.k
        self._changes = sorted(rng.sample(range(1, k + 1), min(self._depth - 1, k)))
        self._next_change = 0
        self._lowest = 0
        self._aside = set()
        self._others_waited = False
        return True

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        step = view.step
        runnable = view.runnable
        if self._others_waited:  # every step since the last grant could have gone elsewhere
            self._longest = max(self._longest, step)
        self._others_waited = len(runnable) > 1
        if self._others_waited:
            self._longest = max(self._longest, step + 1)
        priority = self._priority
        current = view.current
        changes = self._changes
        while self._next_change < len(changes) and changes[self._next_change] <= step:
            self._next_change += 1
            if current >= 0:
                self._lowest -= 1  # a change point: below every other worker
                priority[current] = self._lowest
        aside = self._aside
        if current >= 0 and current in runnable and not view.current_can_continue:
            if self._demote:  # it yielded: below every other worker
                self._lowest -= 1
                priority[current] = self._lowest
            else:
                aside.add(current)  # it yielded: it waits for someone else
        elif current >= 0:
            aside.clear()  # it made progress: every spinner may look again
        lease = UNLIMITED
        if self._next_change < len(changes):
            lease = max(1, changes[self._next_change] - step)
        if not aside:  # always so under demote
            return max(runnable, key=priority.__getitem__), lease
        eligible = [w for w in runnable if w not in aside]
        if not eligible:  # only spinners left: they take turns by priority
            aside.clear()
            return max(runnable, key=priority.__getitem__), lease
        chosen = max(eligible, key=priority.__getitem__)
        if any(priority[w] > priority[chosen] for w in aside if w in runnable):
            lease = 1
        return chosen, lease

    def next_u64(self) -> int:
        return self._rng.getrandbits(64)
