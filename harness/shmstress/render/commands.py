"""The exact command line that reruns a configuration, printed with every failure."""

from __future__ import annotations

import shlex

from shmstress.core.config import RunConfig
from shmstress.core.noise import NOISE_KINDS, NoiseConfig


def run_command(config: RunConfig, free: bool = True) -> str:
    """``shmstress run ...`` with every option that shapes the run, seed included; with
    ``free=False`` only those a controlled run takes (``run`` refuses free mode's duration
    and noise in controlled mode), for the controlled options to follow."""
    args = ["shmstress", "run", "--tracker", config.tracker]
    if config.variant:
        args += ["--variant", config.variant]
    for role, count in config.counts.items():
        args += ["--workers", f"{role}={count}"]
    for name, value in config.params.items():
        args += ["--param", f"{name}={value}"]
    if free:
        args += ["--duration", f"{config.duration:g}"]
    if config.max_points is not None:
        args += ["--points", str(config.max_points)]
    if config.seed is not None:
        args += ["--seed", str(config.seed)]
    if free:
        args += ["--noise", f"{config.noise.probability:g}"]
        default_noise = NoiseConfig()
        if config.noise.kinds != NOISE_KINDS:
            args += ["--noise-kind", ",".join(config.noise.kinds)]
        if config.noise.max_sleep_us != default_noise.max_sleep_us:
            args += ["--max-sleep-us", f"{config.noise.max_sleep_us:g}"]
        if config.noise.policy != default_noise.policy:
            args += ["--noise-policy", config.noise.policy]
    if config.checks is not None:
        for invariant in config.checks:
            args += ["--check", invariant]
    if free and not config.stop_on_first:
        args.append("--keep-going")
    default = RunConfig(tracker=config.tracker)
    if free and config.hang_timeout != default.hang_timeout:  # what no progress was timed by
        args += ["--hang-timeout", f"{config.hang_timeout:g}"]
    if config.stop_timeout != default.stop_timeout:
        args += ["--stop-timeout", f"{config.stop_timeout:g}"]
    return shlex.join(args)
