"""shmstress: a multiprocess concurrency stress harness for data structures in shared memory."""

from harness.config import RunConfig
from harness.control import Phase
from harness.exit_reason import ExitReason
from harness.locks import InstrumentedLock
from harness.noise import NoiseConfig
from harness.result import RunResult, Violation
from harness.runtime import Runtime, StopRun
from harness.shm import Arena, SharedArray
from harness.tracker_api import (
    NONE,
    ApiConflict,
    BaseTracker,
    FoundViolation,
    Invariant,
    Parameter,
    Role,
    Tracker,
    TrackerRuntime,
    WorkerInfo,
    describe_worker,
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
