"""The scheduling-strategy protocol, after Shuttle's ``Scheduler`` trait.

A strategy is asked three things: whether there is another execution to run
(``new_execution``), which worker takes the next step and for how many
steps it may go on (``next_task``), and for random bits (``next_u64``: the
seed every worker's RNG of the execution derives from). Every random draw of
a controlled run is made here, in the coordinator, from one seeded RNG.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import ClassVar, Protocol, runtime_checkable

from shmstress.core.access import Footprint
from shmstress.core.errors import ConfigError
from shmstress.core.trace import Step, step_number

UNLIMITED = 1 << 62
UNBOUNDED = -1
"""A ``StrategySpec.bound`` for DPOR: no preemption bound."""
SEED_MASK = (1 << 63) - 1


Knob = int | str
"""A strategy's parameter: PCT's depth and spin rule, a bounded search's bound, the
portfolio's member."""


@dataclass(frozen=True)
class SearchSpace:
    """What a strategy is built for: the workers of an execution, the steps it may take
    (PCT's first k), what the steps say they touch (a key of the portfolio's mixes), and
    whether it runs as a portfolio's member (DPOR then keeps a bounded frontier)."""

    workers: int
    max_steps: int
    footprints: str = "undeclared"
    member: bool = False


@dataclass(frozen=True)
class StrategySpec:
    """A strategy and its parameters, as the CLI takes them and bundles store them.

    Each strategy has its own subclass (beside the strategy, in its module): its fields
    are its parameters, checked when it is made, so a spec that exists can run; it says
    what it is (``describe``), how a command line names it (``options``) and builds its
    strategy (``build``). ``strategies.spec_named`` makes one from a name, for the CLI
    and for bundles; nothing else asks a spec its name to decide what to do.
    """

    name: ClassVar[str]
    searches: ClassVar[bool] = False
    """A search the CLI offers (``--strategy``); the others are built from a schedule
    (replay, guided, ...) or name how a failure was found (a free run, a shrink)."""
    seedless: ClassVar[bool] = False
    """Its search takes no seed: exhaustive and DPOR try the same schedules in the same
    order whatever it is (the seed only seeds the processes' ``random``, one value for
    every execution), so a seed drawn at random and printed would only mislead."""
    flags: ClassVar[tuple[str, ...]] = ()
    """Its parameters a command line sets, each as ``--<name>``."""

    def knobs(self) -> dict[str, Knob]:
        """Its parameters by name: what a bundle stores."""
        return {item.name: getattr(self, item.name) for item in fields(self)}

    def describe(self) -> str:
        return self.name.replace("_", " ")

    def short(self) -> str:
        """In a few words, as a portfolio names its member: ``pct depth 4``."""
        return self.describe()

    def options(self) -> list[str]:
        """The command-line options that choose this strategy, parameters included."""
        return ["--strategy", self.name,
                *(part for flag in self.flags for part in (f"--{flag}", str(getattr(self, flag))))]

    def build(self, seed: int, space: SearchSpace) -> Strategy:
        """The strategy, seeded, for ``space``: only a search builds from its spec alone."""
        raise ConfigError(f"{self.describe()} is not a search; choose one with --strategy")


@dataclass(frozen=True)
class FreeRunSpec(StrategySpec):
    """A free run's failure: no strategy chose who ran, its noise did (a bundle keeps it)."""

    name = "free"


@dataclass(frozen=True)
class ShrunkSpec(StrategySpec):
    """A schedule made by shrinking another (``repro.shrink``)."""

    name = "shrink"


def require(flag: str, value: int, least: int, words: str = "") -> None:
    """One ConfigError line unless ``value`` (of option ``flag``) is at least ``least``."""
    if value < least:
        raise ConfigError(f"--{flag} must be >= {least}{words}, got {value}")


class SchedulerView(Protocol):
    """What a strategy may look at when it decides (the coordinator's live state)."""

    @property
    def step(self) -> int:
        """Index of the step about to be taken."""
        ...

    @property
    def current(self) -> int:
        """The worker that took the previous step, or -1 before the first."""
        ...

    @property
    def runnable(self) -> Sequence[int]:
        """Workers waiting at a point that can be taken now, ascending."""
        ...

    @property
    def current_can_continue(self) -> bool:
        """The previous worker is runnable and did not yield: switching away preempts it."""
        ...

    @property
    def workers(self) -> int:
        ...

    def label(self, worker: int) -> str:
        """The label of the point ``worker`` waits at."""
        ...

    def who(self, worker: int) -> str:
        """The worker by role and number (``clerk #1``), as every report names it."""
        ...

    def describe(self, worker: int) -> str:
        """Where ``worker`` is, in words: at a label, blocked on a lock, finished."""
        ...


class Strategy(Protocol):
    @property
    def spec(self) -> StrategySpec: ...

    def new_execution(self) -> bool:
        """Prepare the next execution; False once the strategy has nothing left to try."""
        ...

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        """(worker, steps it may take before the strategy is asked again, at least 1)."""
        ...

    def next_u64(self) -> int: ...


@runtime_checkable
class Scripting(Protocol):
    """A strategy that can decide several steps ahead, for the runnable set it is shown.

    The coordinator of a controlled session asks ``next_script`` instead of
    ``next_task``: the first worker takes the step now, and the running worker
    hands each later step to the worker the script names, without the
    coordinator, until the script ends or the set of runnable workers may have
    changed (``controlled.channel``). Only a strategy whose choice at a step
    depends on nothing but the runnable set (and its own RNG) can script;
    whatever was drawn beyond the point where a script ends is dropped.
    """

    def next_script(self, view: SchedulerView, limit: int) -> Sequence[int]:
        """The worker of each of the next steps (1 to ``limit`` of them), first one now."""
        ...


@runtime_checkable
class Observing(Protocol):
    """A strategy that learns from each finished execution what its steps touched.

    Partial-order reduction needs it: two steps by different workers that touch
    nothing in common commute, so only the orders of conflicting steps need
    exploring. The session calls ``observe`` once after each execution, before
    ``new_execution``, with one footprint per step taken, in schedule order.
    """

    def observe(self, footprints: Sequence[Footprint]) -> None: ...


@runtime_checkable
class Bounded(Strategy, Protocol):
    """A search with an end (bounded exhaustive search, DPOR): it can say whether it ran every
    schedule within its bound, and, when a budget cut it first, how many schedules it had
    found and not run yet, so that a cut search says "N of at least M", never "all"."""

    @property
    def finished(self) -> bool:
        """``new_execution`` said there was nothing left to try."""
        ...

    def untried(self) -> int:
        """Schedules found and not yet run: each is at least one execution more, so the
        search needs at least this many more (a lower bound: running them finds more)."""
        ...


@runtime_checkable
class Delegating(Protocol):
    """A strategy that hands each execution to one of its members (``portfolio``)."""

    @property
    def active(self) -> Strategy:
        """The member that decides the current execution."""
        ...

    def found_by(self) -> StrategySpec:
        """The strategy's spec naming the member of the current execution."""
        ...


class Kinds:
    """Which protocols each strategy class follows, asked once per class (a session keeps
    one): in Python 3.11 an isinstance check against a runtime-checkable protocol walks the
    protocol's members every time (10 to 50 us), and every execution asks up to three."""

    def __init__(self) -> None:
        self._known: dict[tuple[type, type], bool] = {}

    def of(self, strategy: Strategy, protocol: type) -> bool:
        key = (type(strategy), protocol)
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = isinstance(strategy, protocol)
        return known


def acting(strategy: Strategy) -> Strategy:
    """The strategy that decides the current execution: a portfolio's member, or itself.
    Asked once per execution, so a member's scripts and leases work as if it ran alone."""
    return strategy.active if isinstance(strategy, Delegating) else strategy


def current_spec(strategy: Strategy) -> StrategySpec:
    """What a bundle of the current execution stores: a portfolio names its member."""
    return strategy.found_by() if isinstance(strategy, Delegating) else strategy.spec


class ScheduleDiverged(Exception):  # noqa: N818 - a replay outcome, not a harness error
    """A replayed execution left its recorded schedule."""

    def __init__(self, step: int, expected: Step, expected_who: str, actual: str) -> None:
        super().__init__(f"step {step_number(step)}: expected {expected.label!r} by "
                         f"{expected_who}, but {actual}")
        self.step = step
        self.expected = expected
        self.actual = actual


class ScheduleEnded(Exception):  # noqa: N818 - a replay outcome
    """A replayed execution took every recorded step and workers still wait."""


class OneExecution:
    """A strategy that runs one execution and no more (a replay, a guided or drawn
    schedule): its search is someone else's."""

    _started = False

    def new_execution(self) -> bool:
        if self._started:
            return False
        self._started = True
        return True


def default_choice(view: SchedulerView) -> int:
    """The schedule without preemptions: the previous worker goes on while it can; then the
    next runnable worker after it in id order. Shrinking counts deviations from it; bounded
    search charges only those that switch away from a worker that could go on, or hand over
    out of turn after a yield (``Exhaustive.cost``)."""
    if view.current_can_continue:
        return view.current
    runnable = view.runnable
    for worker in runnable:
        if worker > view.current:
            return worker
    return runnable[0]


def seeded_rng(seed: int, purpose: str) -> random.Random:
    return random.Random(f"shmstress:{purpose}:{seed}")
