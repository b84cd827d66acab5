"""Scheduling strategies for controlled mode, one module each behind ``base.Strategy``."""

from __future__ import annotations

from dataclasses import fields

from shmstress.controlled.strategies.base import (
    UNBOUNDED,
    FreeRunSpec,
    Knob,
    ScheduleDiverged,
    ScheduleEnded,
    SchedulerView,
    SearchSpace,
    ShrunkSpec,
    Strategy,
    StrategySpec,
)
from shmstress.controlled.strategies.blocks import Blocks, BlocksSpec
from shmstress.controlled.strategies.dpor import DPOR_BOUND, Dpor, DporSpec
from shmstress.controlled.strategies.drawn import DrawnSpec
from shmstress.controlled.strategies.exhaustive import Exhaustive, ExhaustiveSpec
from shmstress.controlled.strategies.follow import FollowSpec
from shmstress.controlled.strategies.guided import Guided, GuidedSpec
from shmstress.controlled.strategies.pct import SPIN_RULES, Pct, PctSpec
from shmstress.controlled.strategies.portfolio import (
    DECLARED_MIX,
    DEFAULT_MIX,
    PLAIN_MIX,
    Mix,
    Portfolio,
    PortfolioSpec,
    mix_words,
)
from shmstress.controlled.strategies.random_walk import RandomWalk, RandomWalkSpec
from shmstress.controlled.strategies.replay import Replay, ReplaySpec
from shmstress.core.errors import ConfigError

SPECS: dict[str, type[StrategySpec]] = {spec.name: spec for spec in (
    PortfolioSpec, PctSpec, RandomWalkSpec, ExhaustiveSpec, DporSpec,
    ReplaySpec, GuidedSpec, BlocksSpec, FollowSpec, DrawnSpec, FreeRunSpec, ShrunkSpec)}
"""Every strategy by name: its spec's class. Adding a strategy is adding its module and
its spec here."""
EXPLORING = tuple(name for name, spec in SPECS.items() if spec.searches)
KNOB_FLAGS = tuple(dict.fromkeys(flag for name in EXPLORING for flag in SPECS[name].flags))
"""Every search's parameters a command line sets: ``--depth``, ``--spin``, ``--bound``."""
DEFAULT = PortfolioSpec.name
"""Controlled and plain mode's default strategy (``strategies/portfolio.py`` says why)."""


def bound_words(bound: int) -> str:
    """A preemption bound as ``--help`` says it: ``2``, or ``none`` for DPOR's unbounded."""
    return "none" if bound == UNBOUNDED else str(bound)


def taking(flag: str) -> tuple[str, ...]:
    """The searches whose parameters include ``flag`` (``depth``: pct)."""
    return tuple(name for name in EXPLORING if flag in SPECS[name].flags)


def spec_named(name: str, **knobs: Knob) -> StrategySpec:
    """The spec of strategy ``name`` with ``knobs`` (the rest at its defaults), checked;
    one ConfigError line for an unknown strategy, a parameter it does not take (``--depth
    applies only with --strategy pct``) or a value out of range."""
    spec = SPECS.get(name)
    if spec is None:
        raise ConfigError(f"unknown strategy {name!r}; choose from {', '.join(EXPLORING)}")
    wrong = sorted(knob for knob in knobs if knob not in {f.name for f in fields(spec)})
    takers = " or ".join(taking(wrong[0])) if wrong else ""
    if wrong and takers:
        flags = ", ".join(f"--{knob}" for knob in wrong)
        raise ConfigError(f"{flags} appl{'ies' if len(wrong) == 1 else 'y'} only with "
                          f"--strategy {takers}")
    if wrong:  # no command line sets it: a bundle's, or a call's
        raise ConfigError(f"strategy {name} takes no {', '.join(wrong)}")
    return spec(**knobs)


def spec_of(strategy: str | StrategySpec, **knobs: Knob | None) -> StrategySpec:
    """``strategy`` as a spec: a spec as it is (then no knob may be given), or a name with
    the knobs given (None: not given; ``spec_named`` checks the rest)."""
    chosen = {knob: value for knob, value in knobs.items() if value is not None}
    if isinstance(strategy, StrategySpec):
        if chosen:
            raise ConfigError(f"{', '.join(chosen)}: give them to {type(strategy).__name__} "
                              "itself, not beside it")
        return strategy
    return spec_named(strategy, **chosen)


def exploring_strategy(spec: StrategySpec, seed: int, workers: int, max_steps: int,
                       footprints: str = "undeclared", member: bool = False) -> Strategy:
    """The search ``spec`` names, seeded (``StrategySpec.build``): replay and guided are
    built from a schedule, not from their spec."""
    return spec.build(seed, SearchSpace(workers, max_steps, footprints, member))


__all__ = [
    "DECLARED_MIX",
    "DEFAULT",
    "DEFAULT_MIX",
    "DPOR_BOUND",
    "EXPLORING",
    "KNOB_FLAGS",
    "PLAIN_MIX",
    "SPECS",
    "SPIN_RULES",
    "UNBOUNDED",
    "Blocks",
    "BlocksSpec",
    "Dpor",
    "DporSpec",
    "DrawnSpec",
    "Exhaustive",
    "ExhaustiveSpec",
    "FollowSpec",
    "FreeRunSpec",
    "Guided",
    "GuidedSpec",
    "Knob",
    "Mix",
    "Pct",
    "PctSpec",
    "Portfolio",
    "PortfolioSpec",
    "RandomWalk",
    "RandomWalkSpec",
    "Replay",
    "ReplaySpec",
    "ScheduleDiverged",
    "ScheduleEnded",
    "SchedulerView",
    "SearchSpace",
    "ShrunkSpec",
    "Strategy",
    "StrategySpec",
    "bound_words",
    "exploring_strategy",
    "mix_words",
    "spec_named",
    "spec_of",
    "taking",
]
