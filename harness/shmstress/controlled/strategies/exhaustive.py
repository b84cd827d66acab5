"""Bounded exhaustive search: every schedule with at most ``bound`` preemptions.

Depth-first over the choice at each step, as CHESS does with its preemption
bound (Musuvathi and Qadeer, PLDI 2007). A *preemption* costs one unit of
the bound: switching away from a worker that could go on. Switching after
the running worker blocked on a lock or finished, and the choice of the
first worker, are free, so every order of those switches is searched
whatever the bound (three one-step workers give all six schedules at bound
0).

A worker that yields (``os.sched_yield`` while it spins) hands over to the
next worker in id order for free; handing over to any other worker costs a
unit like a preemption. CHESS treats a yield as a free switch, but then a
tracker whose workers spin has no finite search at any bound: every spin
would branch over every worker (the DRA tracker with three workers and a
12-step run phase passed 17,000 schedules at bound 0 without an end).

Executions must be deterministic for the search to be sound, so every
execution uses the same worker seed. Meant for small scenarios: the number
of schedules grows like steps^bound times the orders of the free switches.
"""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.controlled.strategies.base import (
    UNLIMITED,
    SchedulerView,
    SearchSpace,
    Strategy,
    StrategySpec,
    default_choice,
    require,
    seeded_rng,
)
from shmstress.core.plurals import counted


@dataclass(frozen=True)
class ExhaustiveSpec(StrategySpec):
    """Bounded exhaustive search, with its preemption bound."""

    name = "exhaustive"
    searches = True
    seedless = True
    flags = ("bound",)
    bound: int = 2

    def __post_init__(self) -> None:
        require("bound", self.bound, 0)

    def describe(self) -> str:
        return (f"exhaustive (at most {counted(self.bound, 'preemption')} or out-of-turn "
                "handovers after a yield)")

    def short(self) -> str:
        return f"exhaustive bound {self.bound}"

    def build(self, seed: int, space: SearchSpace) -> Strategy:
        return Exhaustive(seed, self.bound)


@dataclass
class _Choice:
    step: int
    options: tuple[int, ...]  # the default first
    index: int
    spent: int  # units of the bound spent before this step
    costly: bool  # the previous worker is runnable: any option but the default costs

    def cost(self, index: int) -> int:
        return int(self.costly and index > 0)


class Exhaustive:
    finished = False  # ``base.Bounded``: set once ``new_execution`` found nothing left

    def __init__(self, seed: int, bound: int, execution_seed: int | None = None) -> None:
        self.spec = ExhaustiveSpec(bound=bound)  # checks it
        self._bound = bound
        self._seed = (seeded_rng(seed, "exhaustive").getrandbits(64) if execution_seed is None
                      else execution_seed)
        self._trail: list[_Choice] = []
        self._prefix: dict[int, int] = {}  # step -> worker, up to the choice being varied
        self._spent = 0
        self._started = False

    def new_execution(self) -> bool:
        if not self._started:
            self._started = True
            return True
        trail = self._trail
        while trail:
            last = trail[-1]
            following = last.index + 1
            if following < len(last.options) and last.spent + last.cost(following) <= self._bound:
                last.index = following
                self._prefix = {c.step: c.options[c.index] for c in trail}
                self._trail = []
                self._spent = 0
                return True
            trail.pop()
        self.finished = True
        return False

    def untried(self) -> int:
        """Choices of the execution just run not tried yet within the bound, each the root of
        at least one schedule more (``base.Bounded``)."""
        return sum(sum(1 for option in range(choice.index + 1, len(choice.options))
                       if choice.spent + choice.cost(option) <= self._bound)
                   for choice in self._trail)

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        default = default_choice(view)
        costly = view.current in view.runnable  # it could go on, or it yielded
        if len(view.runnable) == 1 or (costly and self._spent >= self._bound):
            return default, UNLIMITED  # no choice here; asked again where the next one may be
        step = view.step
        options = (default, *(w for w in view.runnable if w != default))
        planned = self._prefix.get(step)
        index = options.index(planned) if planned in options else 0
        choice = _Choice(step, options, index, self._spent, costly)
        self._trail.append(choice)
        self._spent += choice.cost(index)
        return options[index], 1

    def next_u64(self) -> int:
        return self._seed
