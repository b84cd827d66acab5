"""Bounded exhaustive search: every schedule with at most ``bound`` preemptions.

Depth-first over the choice at each step, as CHESS does with its preemption
bound (Musuvathi and Qadeer, PLDI 2007). A choice costs one unit of the
bound when it differs from the schedule without preemptions
(``default_choice``): switching away from a worker that could go on, or
passing over the next worker in line when it could not. Executions must be
deterministic for the search to be sound, so every execution uses the same
worker seed. Meant for small scenarios: the number of schedules grows like
steps^bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.strategies.base import (
    UNLIMITED,
    SchedulerView,
    StrategySpec,
    default_choice,
    seeded_rng,
)


@dataclass
class _Choice:
    options: tuple[int, ...]  # the default first
    index: int
    spent: int  # deviations before this step


class Exhaustive:
    def __init__(self, seed: int, bound: int, execution_seed: int | None = None) -> None:
        if bound < 0:
            raise ValueError("the preemption bound must be >= 0")
        self._bound = bound
        self._seed = (seeded_rng(seed, "exhaustive").getrandbits(64) if execution_seed is None
                      else execution_seed)
        self._trail: list[_Choice] = []
        self._prefix: list[int] = []
        self._spent = 0
        self._started = False
        self.spec = StrategySpec("exhaustive", bound=bound)

    def new_execution(self) -> bool:
        if not self._started:
            self._started = True
            return True
        trail = self._trail
        while trail:
            last = trail[-1]
            if last.index + 1 < len(last.options) and last.spent + 1 <= self._bound:
                last.index += 1
                self._prefix = [c.options[c.index] for c in trail]
                self._trail = []
                self._spent = 0
                return True
            trail.pop()
        return False

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        step = view.step
        default = default_choice(view)
        spent = self._spent
        if spent >= self._bound and step >= len(self._prefix):
            return default, UNLIMITED  # nothing left to vary in this execution
        options = (default, *(w for w in view.runnable if w != default))
        index = 0
        if step < len(self._prefix) and self._prefix[step] in options:
            index = options.index(self._prefix[step])
        self._trail.append(_Choice(options, index, spent))
        self._spent += index > 0
        return options[index], 1

    def next_u64(self) -> int:
        return self._seed
