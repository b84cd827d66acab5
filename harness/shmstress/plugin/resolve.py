"""Resolving a run's configuration against its tracker, before any process starts.

Defaults come from the tracker (its first variant, its role counts and
parameter defaults), and everything that cannot run is refused in one message.
"""

from __future__ import annotations

import math
import os
import secrets
from dataclasses import replace

import psutil

from shmstress.core.config import MAX_SLEEP_US, MAX_WORKERS, MIN_RING_SIZE, RunConfig
from shmstress.core.errors import ConfigError, PluginError, UnknownVariantError
from shmstress.core.shm import SHM_DIR
from shmstress.plugin.tracker import Scenario, Tracker


def resolve(config: RunConfig, tracker: type[Tracker]) -> RunConfig:
    """Fill defaults from the tracker and reject anything that cannot run, in one message."""
    problems: list[str] = []
    variant = config.variant or next(iter(tracker.variants))
    if variant not in tracker.variants:
        raise UnknownVariantError(
            f"tracker {tracker.name} has no variant {variant!r}; "
            f"choose from {', '.join(tracker.variants)}"
        )
    scenario = Scenario("")
    if config.scenario is not None:
        found = tracker.scenarios.get(config.scenario)
        if found is None:
            names = ", ".join(tracker.scenarios) or "none"
            raise ConfigError(f"tracker {tracker.name} has no scenario {config.scenario!r}; "
                              f"its scenarios: {names}")
        scenario = found
    config = replace(config, counts={**scenario.workers, **config.counts},
                     params={**scenario.params, **config.params})
    unknown_roles = sorted(set(config.counts) - set(tracker.roles))
    if unknown_roles:
        problems.append(
            f"tracker {tracker.name} has no role {', '.join(unknown_roles)}; "
            f"its roles are {', '.join(tracker.roles)}"
        )
    counts = {role: config.counts.get(role, spec.count) for role, spec in tracker.roles.items()}
    problems += [f"--workers {role}=N must be >= 1, got {n}" for role, n in counts.items() if n < 1]
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
        problem = tracker.parameters[name].problem(f"--param {name}", value)
        if problem:
            problems.append(problem)
    if not problems:
        try:
            problems += tracker.param_problems(params)
        except Exception as exc:
            raise PluginError(f"tracker {tracker.name}: param_problems() raised "
                              f"{type(exc).__name__}: {exc}") from exc
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
    if not (config.hang_timeout > 0 and math.isfinite(config.hang_timeout)):
        problems.append(f"--hang-timeout must be a finite number > 0, got {config.hang_timeout}")
    if config.noise.max_sleep_us > MAX_SLEEP_US:
        problems.append(f"--max-sleep-us must be <= {MAX_SLEEP_US:,.0f} (one second), got "
                        f"{config.noise.max_sleep_us:g}")
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
    if not problems:
        problems += _memory_problems(config, sum(counts.values()))
    problems += config.noise.validate()
    if problems:
        raise ConfigError("; ".join(problems))
    seed = config.seed if config.seed is not None else secrets.randbelow(2**32)
    checks = tuple(config.checks) if config.checks else None  # None: every invariant
    return replace(
        config, variant=variant, counts=counts, params=params, seed=seed, checks=checks
    )


_TAPE_BYTES = 8  # per point of --tape-size
_SLOT_BYTES = 128  # per record of --ring-size, per worker


def _memory_problems(config: RunConfig, workers: int) -> list[str]:
    """A recording that could never fit: more shared memory than the machine has, or than
    the file system of the segments holds (a run would die of SIGBUS, or after the run)."""
    tape = config.tape_size * _TAPE_BYTES
    rings = config.ring_size * _SLOT_BYTES * workers
    limits = [("memory", psutil.virtual_memory().total)]
    try:
        stat = os.statvfs(SHM_DIR)
        limits.append((f"{SHM_DIR}", stat.f_blocks * stat.f_frsize))
    except OSError:
        pass
    where, limit = min(limits, key=lambda item: item[1])
    problems = []
    if tape > limit:
        problems.append(f"--tape-size {config.tape_size:,} needs {_size(tape)} of shared memory; "
                        f"{where} has {_size(limit)}")
    elif rings > limit:
        problems.append(f"--ring-size {config.ring_size:,} needs {_size(rings)} of shared memory "
                        f"for {workers} workers; {where} has {_size(limit)}")
    return problems


def _size(nbytes: int) -> str:
    value = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:,.0f} {unit}" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} TiB"
