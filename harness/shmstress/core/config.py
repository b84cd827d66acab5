"""A run's configuration: plain data, resolved against its tracker by ``plugin.resolve``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from shmstress.core.noise import NoiseConfig

DEFAULT_NOISE = 0.1
OUT_ENV = "SHMSTRESS_OUT"
"""Overrides the default directory for repro bundles and logs (the test suite points it at a
tmp dir; ``tox -e stress`` at the directory the nightly job uploads)."""
SHM_DIR_ENV = "SHMSTRESS_SHM_DIR"
"""Where runs keep their shared-memory segments (default /dev/shm: ``core.shm.SHM_DIR``)."""
MIN_RING_SIZE = 256  # slots per worker: a record and its continuation slots must fit
DEFAULT_RING_SIZE = 16384  # records kept per worker (older ones are counted as lost)
DEFAULT_TAPE_SIZE = 1 << 20  # points whose schedule is kept for replay
MAX_WORKERS = 256  # every worker is an OS process: a typo like --workers clerk=10000 must not fork
DEFAULT_HANG_TIMEOUT = 10.0
"""Seconds a free-mode worker may go without finishing a step (reaching a new point) before
the watchdog reports it hung, with its stack, and ends the run (exit reason timeout)."""
MAX_SLEEP_US = 1_000_000.0
"""The longest injected sleep: a second per point already slows a run to a crawl."""


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run; with the seed it is what a rerun needs."""

    tracker: str  # an installed tracker's name, or path/to/file.py:ClassName
    variant: str | None = None
    scenario: str | None = None  # a tracker's named scenario; counts and params override it
    counts: Mapping[str, int] = field(default_factory=dict)
    params: Mapping[str, int] = field(default_factory=dict)
    duration: float = 2.0
    max_points: int | None = None
    seed: int | None = None
    noise: NoiseConfig = field(default_factory=lambda: NoiseConfig(DEFAULT_NOISE))
    stop_on_first: bool = True
    drain_timeout: float = 5.0
    stop_timeout: float = 10.0
    hang_timeout: float = DEFAULT_HANG_TIMEOUT  # free mode's watchdog
    max_violations: int = 64
    checks: tuple[str, ...] | None = None  # invariants checked; None: all of the tracker's
    record: bool = True
    ring_size: int = DEFAULT_RING_SIZE
    tape_size: int = DEFAULT_TAPE_SIZE


def default_out() -> str:
    """Where failing runs write bundles and logs unless told otherwise: ``$SHMSTRESS_OUT``,
    read at call time (a fixture may set it), else ``shmstress-out``."""
    return os.environ.get(OUT_ENV, "shmstress-out")
