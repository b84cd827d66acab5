"""Why a run ended: every run ends with one of these, never with a bare traceback."""

from __future__ import annotations

import enum


class ExitReason(enum.Enum):
    DURATION_REACHED = "duration-reached"
    POINTS_REACHED = "points-reached"
    VIOLATION = "violation"
    WORKER_CRASHED = "worker-crashed"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"
    # controlled mode
    DEADLOCK = "deadlock"
    EXECUTIONS_DONE = "executions-done"
    STEP_BOUND = "step-bound"
    DIVERGED = "diverged"

    def describe(self) -> str:
        return _DESCRIPTIONS[self]

    @property
    def exit_code(self) -> int:
        """0 clean, 1 violation or deadlock, 3 a replay diverged, 4 the run itself broke,
        130 interrupted (as shells do)."""
        return _EXIT_CODES[self]


_DESCRIPTIONS = {
    ExitReason.DURATION_REACHED: "ran for the requested duration, settled, and checked at rest",
    ExitReason.POINTS_REACHED: "reached the requested points, settled, and checked at rest",
    ExitReason.VIOLATION: "stopped at the first invariant violation",
    ExitReason.WORKER_CRASHED: "a worker process crashed",
    ExitReason.TIMEOUT: "workers did not stop in time; stacks dumped, workers killed",
    ExitReason.INTERRUPTED: "Ctrl-C or SIGTERM; workers torn down",
    ExitReason.DEADLOCK: "every unfinished worker waits for a lock another one holds",
    ExitReason.EXECUTIONS_DONE: "ran every execution (or the whole bounded search) to the end",
    ExitReason.STEP_BOUND: "ran every execution; some reached --max-steps before finishing",
    ExitReason.DIVERGED: "the replay left the recorded schedule",
}

_EXIT_CODES = {
    ExitReason.DURATION_REACHED: 0,
    ExitReason.POINTS_REACHED: 0,
    ExitReason.VIOLATION: 1,
    ExitReason.WORKER_CRASHED: 4,
    ExitReason.TIMEOUT: 4,
    ExitReason.INTERRUPTED: 130,
    ExitReason.DEADLOCK: 1,
    ExitReason.EXECUTIONS_DONE: 0,
    ExitReason.STEP_BOUND: 0,
    ExitReason.DIVERGED: 3,
}
