"""A run's configuration, and its validation before any process starts."""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from harness.errors import ConfigError, UnknownVariantError
from harness.noise import NoiseConfig
from harness.tracker_api import Tracker

DEFAULT_NOISE = 0.1
MIN_RING_SIZE = 256  # slots per worker: a record and its continuation slots must fit
MAX_WORKERS = 256  # every worker is an OS process: a typo like --binders 10000 must not fork


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run; with the seed it is what a rerun needs."""

    tracker: str = "dra"
    variant: str | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    params: Mapping[str, int] = field(default_factory=dict)
    duration: float = 2.0
    max_points: int | None = None
    seed: int | None = None
    noise: NoiseConfig = field(default_factory=lambda: NoiseConfig(DEFAULT_NOISE))
    stop_on_first: bool = True
    drain_timeout: float = 5.0
    stop_timeout: float = 10.0
    max_violations: int = 64
    checks: tuple[str, ...] | None = None  # invariants checked; None: all of the tracker's
    record: bool = True
    ring_size: int = 16384  # records kept per worker (older ones are counted as lost)
    tape_size: int = 1 << 20  # points whose schedule is kept for replay


def resolve(config: RunConfig, tracker: type[Tracker]) -> RunConfig:
    """Fill defaults from the tracker and reject anything that cannot run, in one message."""
    problems: list[str] = []
    variant = config.variant or next(iter(tracker.variants))
    if variant not in tracker.variants:
        raise UnknownVariantError(
            f"tracker {tracker.name} has no variant {variant!r}; "
            f"choose from {', '.join(tracker.variants)}"
        )
    unknown_roles = sorted(set(config.counts) - set(tracker.roles))
    if unknown_roles:
        problems.append(
            f"tracker {tracker.name} has no role {', '.join(unknown_roles)}; "
            f"its roles are {', '.join(tracker.roles)}"
        )
    counts = {role: config.counts.get(role, tracker.default_counts.get(role, 1))
              for role in tracker.roles}
    problems += [f"--{role}s must be >= 1, got {n}" for role, n in counts.items() if n < 1]
    if sum(counts.values()) > MAX_WORKERS:
        problems.append(
            f"at most {MAX_WORKERS} worker processes in all, got {sum(counts.values())}"
        )
    unknown_params = sorted(set(config.params) - set(tracker.parameters))
    if unknown_params:
        problems.append(
            f"tracker {tracker.name} has no parameter {', '.join(unknown_params)}; "
            f"its parameters are {', '.join(tracker.parameters)}"
        )
    params = {name: config.params.get(name, p.default) for name, p in tracker.parameters.items()}
    for name, value in params.items():
        problem = tracker.parameters[name].problem(f"--{name}", value)
        if problem:
            problems.append(problem)
    if not (config.duration > 0 and math.isfinite(config.duration)):
        problems.append(f"--duration must be a finite number > 0 of seconds, got {config.duration}")
    if config.max_points is not None and config.max_points < 1:
        problems.append(f"--points must be >= 1, got {config.max_points}")
    if config.seed is not None and config.seed < 0:
        problems.append(f"--seed must be >= 0, got {config.seed}")
    if not (config.drain_timeout >= 0 and math.isfinite(config.drain_timeout)):
        problems.append(f"--drain-timeout must be a finite number >= 0, got {config.drain_timeout}")
    if not (config.stop_timeout > 0 and math.isfinite(config.stop_timeout)):
        problems.append(f"--stop-timeout must be a finite number > 0, got {config.stop_timeout}")
    if config.max_violations < 1:
        problems.append(f"--max-violations must be >= 1, got {config.max_violations}")
    invariant_names = [inv.name for inv in tracker.invariants]
    unknown_checks = sorted(set(config.checks or ()) - set(invariant_names))
    if unknown_checks:
        problems.append(
            f"tracker {tracker.name} has no invariant {', '.join(unknown_checks)}; "
            f"its invariants are {', '.join(invariant_names)}"
        )
    if config.ring_size < MIN_RING_SIZE:
        problems.append(
            f"--ring-size must be >= {MIN_RING_SIZE} (a record with a long sequence field "
            f"takes up to {MIN_RING_SIZE} slots), got {config.ring_size}"
        )
    if config.tape_size < 16:
        problems.append(f"--tape-size must be >= 16, got {config.tape_size}")
    problems += config.noise.validate()
    if problems:
        raise ConfigError("; ".join(problems))
    seed = config.seed if config.seed is not None else secrets.randbelow(2**32)
    checks = tuple(config.checks) if config.checks else None  # None: every invariant
    return replace(
        config, variant=variant, counts=counts, params=params, seed=seed, checks=checks
    )
