"""Scheduling strategies for controlled mode, one module each behind ``base.Strategy``."""

from __future__ import annotations

from shmstress.controlled.strategies.base import (
    UNBOUNDED,
    ScheduleDiverged,
    ScheduleEnded,
    SchedulerView,
    Strategy,
    StrategySpec,
)
from shmstress.controlled.strategies.blocks import Blocks
from shmstress.controlled.strategies.dpor import DPOR_BOUND, MEMBER_KEPT_STEPS, Dpor
from shmstress.controlled.strategies.exhaustive import Exhaustive
from shmstress.controlled.strategies.guided import Guided
from shmstress.controlled.strategies.pct import SPIN_RULES, Pct
from shmstress.controlled.strategies.portfolio import (
    DECLARED_MIX,
    DEFAULT_MIX,
    PLAIN_MIX,
    Mix,
    Portfolio,
    mix_words,
)
from shmstress.controlled.strategies.random_walk import RandomWalk
from shmstress.controlled.strategies.replay import Replay
from shmstress.core.errors import ConfigError

EXPLORING = ("portfolio", "pct", "random_walk", "exhaustive", "dpor")
DEFAULT = "portfolio"
BOUNDS = {"exhaustive": 2, "dpor": DPOR_BOUND}
"""The preemption bound of each bounded strategy when the command line gives none."""
"""Controlled and plain mode's default strategy (``strategies/portfolio.py`` says why)."""


def bound_words(bound: int) -> str:
    """A preemption bound as ``--help`` says it: ``2``, or ``none`` for DPOR's unbounded."""
    return "none" if bound == UNBOUNDED else str(bound)


MIXES: dict[str, Mix] = {"undeclared": DEFAULT_MIX, "declared": DECLARED_MIX,
                         "plain": PLAIN_MIX}
"""The portfolio's mix by what the steps say they touch: a tracker's words declare
nothing, or declare it (``Words.accesses``), or the code is plain (``portfolio.py``)."""


def exploring_strategy(spec: StrategySpec, seed: int, workers: int, max_steps: int,
                       footprints: str = "undeclared", member: bool = False) -> Strategy:
    """A strategy that searches for failures (replay and guided are built from a schedule);
    ``max_steps`` bounds the length of every execution (PCT's first k); ``footprints``
    (a key of ``MIXES``) picks the portfolio's mix; a ``member`` of a portfolio keeps a
    bounded frontier (DPOR's ``MEMBER_KEPT_STEPS``)."""
    if spec.name == "portfolio":
        return Portfolio(seed, lambda spec, member_seed: exploring_strategy(
            spec, member_seed, workers, max_steps, member=True), MIXES[footprints])
    if spec.name == "pct":
        if spec.depth < 1:
            raise ConfigError(f"--depth must be >= 1, got {spec.depth}")
        if spec.spin not in SPIN_RULES:
            raise ConfigError(f"--spin must be one of {', '.join(SPIN_RULES)}, got {spec.spin}")
        return Pct(seed, spec.depth, workers, max_steps, spec.spin)
    if spec.name == "random_walk":
        return RandomWalk(seed)
    if spec.name == "exhaustive":
        if spec.bound < 0:
            raise ConfigError(f"--bound must be >= 0, got {spec.bound}")
        return Exhaustive(seed, spec.bound)
    if spec.name == "dpor":
        if spec.bound < UNBOUNDED:
            raise ConfigError(f"--bound must be >= 0 (or {UNBOUNDED}: none), got {spec.bound}")
        return Dpor(seed, None if spec.bound == UNBOUNDED else spec.bound,
                    kept_steps=MEMBER_KEPT_STEPS if member else None)
    raise ConfigError(f"unknown strategy {spec.name!r}; choose from {', '.join(EXPLORING)}")


__all__ = [
    "BOUNDS",
    "DECLARED_MIX",
    "DEFAULT",
    "DEFAULT_MIX",
    "EXPLORING",
    "PLAIN_MIX",
    "SPIN_RULES",
    "Blocks",
    "Dpor",
    "Exhaustive",
    "Guided",
    "Pct",
    "Portfolio",
    "RandomWalk",
    "Replay",
    "ScheduleDiverged",
    "ScheduleEnded",
    "SchedulerView",
    "Strategy",
    "StrategySpec",
    "bound_words",
    "exploring_strategy",
    "mix_words",
]
