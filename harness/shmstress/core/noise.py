"""Noise injected at points in free mode: the cheap way to widen race windows.

A race window is the code between two points of one worker; a yield or a
short sleep at a point lets another worker run inside it. Which points get
noise is drawn from the worker's own seeded RNG.
"""

from __future__ import annotations

import math
import os
import random
import time
from dataclasses import dataclass

NOISE_KINDS = ("yield", "sleep")
UNIFORM = "uniform"
AIMED = "aimed"
NOISE_POLICIES = (UNIFORM, AIMED)
"""``uniform``: every point draws from the worker's RNG with ``probability``. ``aimed``
(free mode only, ``shmstress.free.aim``): only the locations of near-miss pairs get delays,
drawn from an RNG of their own, at a rate derived from ``probability`` (``AimParams``). The
default is ``NoiseConfig.policy``, named there only."""


@dataclass(frozen=True)
class NoiseConfig:
    """How often and how a worker is perturbed at a point."""

    probability: float = 0.0
    kinds: tuple[str, ...] = NOISE_KINDS
    max_sleep_us: float = 100.0
    policy: str = UNIFORM  # the default policy, named here only: what the bench measured best

    @property
    def draws_from_worker_rng(self) -> bool:
        """Whether the gate consumes the worker's own RNG, which the roles draw from too: a
        replay must then repeat the draws. Aimed noise draws from an RNG of its own, so the
        roles' draws do not depend on where delays landed and there is nothing to repeat."""
        return self.probability > 0 and self.policy == UNIFORM

    def validate(self) -> list[str]:
        problems = []
        if not 0.0 <= self.probability <= 1.0:
            problems.append(f"--noise must be a probability in [0, 1], got {self.probability}")
        unknown = [k for k in self.kinds if k not in NOISE_KINDS]
        if unknown or not self.kinds:
            problems.append(
                f"--noise-kind must be among {', '.join(NOISE_KINDS)}, got {','.join(self.kinds)}"
            )
        if not (self.max_sleep_us >= 0 and math.isfinite(self.max_sleep_us)):
            problems.append(f"--max-sleep-us must be a finite number >= 0, got {self.max_sleep_us}")
        if self.policy not in NOISE_POLICIES:
            problems.append(
                f"--noise-policy must be one of {', '.join(NOISE_POLICIES)}, got {self.policy}"
            )
        return problems


class NoiseGate:
    """Free-mode gate: at each point, maybe yield the CPU or sleep a little."""

    def __init__(self, config: NoiseConfig, rng: random.Random, act: bool = True) -> None:
        """``act=False`` makes the same draws without sleeping or yielding: a controlled
        replay of a free run must consume the worker's RNG exactly as the run did."""
        self._act = act
        self._p = config.probability
        self._rng = rng
        self._sleep = "sleep" in config.kinds
        self._yield = "yield" in config.kinds
        self._max_sleep_s = config.max_sleep_us / 1e6

    def before_point(self, label: str) -> None:
        if self._p and self._rng.random() < self._p:
            if self._sleep and (not self._yield or self._rng.random() < 0.5):
                pause = self._rng.random() * self._max_sleep_s
                if self._act:
                    time.sleep(pause)
            elif self._act:
                os.sched_yield()


@dataclass(frozen=True)
class AimStats:
    """What the aimed noise of one run did (``shmstress.free.aim``), read after the run."""

    targeted_locations: int
    targeted_pairs: int
    delays: int
    productive_delays: int  # delays that let another worker in at an order not seen before
    learnt_pairs: int = 0  # of the targeted pairs, those an earlier run learnt (preloaded)
    notes: tuple[str, ...] = ()  # why saved learning was not used or not saved
    pairs: tuple[tuple[int, int], ...] = ()  # (earlier, later) location codes: to save later
    locations: tuple[tuple[int, int, int], ...] = ()
    """(location code, delays, productive delays) per targeted location: what a run learnt,
    in the form a later run could start from (codes are CRC-32s of labels, stable)."""
    violation_delays: int = 0  # delays followed by a violation the delayed worker reported
