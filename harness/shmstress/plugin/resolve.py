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
from shmstress.core.plurals import sized
from shmstress.core.shm import SHM_DIR, segment_bytes_for
from shmstress.plugin.tracker import Scenario, Tracker
from shmstress.record.recorder import recording_arrays


def resolve(config: RunConfig, tracker: type[Tracker], *, tape: bool = True) -> RunConfig:
    """Fill defaults from the tracker and reject anything that cannot run, in one message.

    ``tape``: the run keeps a free run's tape of ``config.tape_size`` points (a controlled
    run keeps its steps instead, a few KiB), which the shared memory it needs counts."""
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
        problems += _memory_problems(config, sum(counts.values()), tape)
    problems += config.noise.validate()
    if problems:
        raise ConfigError("; ".join(problems))
    seed = config.seed if config.seed is not None else secrets.randbelow(2**32)
    checks = tuple(config.checks) if config.checks else None  # None: every invariant
    return replace(
        config, variant=variant, counts=counts, params=params, seed=seed, checks=checks
    )


def _memory_problems(config: RunConfig, workers: int, tape: bool) -> list[str]:
    """A run whose segments could never fit: more shared memory than the machine has, or
    than the file system of the segments holds (each segment is reserved whole when it is
    made, so the run would be refused then, after the probe). Counted: the recording's
    segments, as the arena packs them; the tracker's state, most often a few KiB in the
    last of them, is not, so the need is a floor."""
    arrays = recording_arrays(workers, config.ring_size, config.tape_size if tape else 1)
    need = segment_bytes_for(arrays.values())
    limits = [("memory", psutil.virtual_memory().total)]
    try:
        stat = os.statvfs(SHM_DIR)
        limits.append((f"{SHM_DIR}", stat.f_blocks * stat.f_frsize))
    except OSError:
        pass
    where, limit = min(limits, key=lambda item: item[1])
    if need <= limit:
        return []
    tape_bytes = arrays["recording.tape"] * 8 if tape else 0
    ring_bytes = arrays["recording.rings"] * 8
    total = f"{sized(need)} with the run's other segments; {where} has {sized(limit)}"
    if tape_bytes >= ring_bytes:
        return [f"--tape-size {config.tape_size:,} needs {sized(tape_bytes)} of shared "
                f"memory ({total})"]
    return [f"--ring-size {config.ring_size:,} needs {sized(ring_bytes)} of shared memory "
            f"for {workers} workers ({total})"]
