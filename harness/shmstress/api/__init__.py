"""shmstress: a multiprocess concurrency stress harness for data structures in shared memory."""

from shmstress.core.config import RunConfig
from shmstress.core.control import Phase
from shmstress.core.exit_reason import ExitReason
from shmstress.core.locks import InstrumentedLock
from shmstress.core.noise import NoiseConfig
from shmstress.core.result import RunResult, Violation
from shmstress.core.runtime import NONE, Runtime, StopRun
from shmstress.core.shm import Arena, SharedArray
from shmstress.core.workers import WorkerInfo, describe_worker
from shmstress.plugin.protocol import (
    ApiConflict,
    BaseTracker,
    FoundViolation,
    Invariant,
    Parameter,
    Role,
    Tracker,
    TrackerRuntime,
    idle,
)

__all__ = [
    "NONE",
    "ApiConflict",
    "Arena",
    "BaseTracker",
    "ExitReason",
    "FoundViolation",
    "InstrumentedLock",
    "Invariant",
    "NoiseConfig",
    "Parameter",
    "Phase",
    "Role",
    "RunConfig",
    "RunResult",
    "Runtime",
    "SharedArray",
    "StopRun",
    "Tracker",
    "TrackerRuntime",
    "Violation",
    "WorkerInfo",
    "describe_worker",
    "idle",
]
