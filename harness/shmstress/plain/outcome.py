"""What one plain-code execution produced: data only, rendered elsewhere."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from shmstress.controlled.strategies.base import ScheduleDiverged
from shmstress.core.trace import Step, step_number


class PlainEnd(enum.Enum):
    FINISHED = "finished"  # every process ended; nothing raised
    FAILED = "failed"  # a process raised (an assert, an exception)
    DEADLOCK = "deadlock"  # processes wait for each other in a cycle
    NO_PROGRESS = "no-progress"  # processes wait for something nobody left can give
    STEP_BOUND = "step-bound"  # --max-steps reached first
    HUNG = "hung"  # a process did not reach its next point in time (code outside control)
    LIMIT = "limit"  # a process hit a limit of the board (--max-processes...): no bug, no verdict
    DIVERGED = "diverged"  # a replay left its recorded schedule
    SCHEDULE_END = "schedule-end"  # a replay took every recorded step and processes still wait


FAILURES = (PlainEnd.FAILED, PlainEnd.DEADLOCK, PlainEnd.NO_PROGRESS)


@dataclass(frozen=True)
class PlainStep:
    """One step: who took which point, where in the code, and what it read or wrote."""

    worker: int
    label: str
    file: str
    line: int
    index: int = -1  # the element of an array, or -1
    value: object = None  # what a read saw or a write stored; None: the step has no value
    has_value: bool = False
    t_ns: int = field(default=0, compare=False)  # monotonic; a replay's differ, not its steps
    loose: bool = field(default=False, compare=False)  # free mode: then code with no points
    # ran outside the step lock, so where it ran among the steps is not recorded

    @property
    def step(self) -> Step:
        return Step(self.worker, self.label)

    @property
    def what(self) -> str:
        """The label with the element it touched: ``read counts[3]``."""
        return self.label.replace("[]", f"[{self.index}]") if self.index >= 0 else self.label


@dataclass(frozen=True)
class Waiting:
    """A process that can no longer go on, and why."""

    worker: int
    label: str  # the point it waits at
    reason: str  # "waits for lock_b, held by worker #2"
    holder: int = -1  # the process it waits for, when one does
    held: tuple[str, ...] = ()  # the locks it holds


@dataclass(frozen=True)
class PlainFailure:
    """Why the execution failed, in one line and in full."""

    end: PlainEnd
    worker: int  # who raised, or the first process in the cycle, or -1
    message: str  # one line: "AssertionError: assert 1 == 2", "deadlock: ..."
    details: str  # the traceback, or one line per waiting process
    step: int  # the steps taken before it
    waiting: tuple[Waiting, ...] = ()

    @property
    def after_step(self) -> int:
        """The number of the last step taken before it, as the interleaving prints it (0:
        before any step), for the "raised, after step N" of every view."""
        return step_number(self.step - 1)


@dataclass(frozen=True)
class PlainOutcome:
    end: PlainEnd
    execution_seed: int
    steps: tuple[PlainStep, ...]
    processes: tuple[str, ...]  # slot -> name ("main", "increment #1")
    preemptions: int  # -1 in free mode: no strategy chose, the OS did
    pids: tuple[int, ...] = ()  # slot -> pid in this execution
    clock: tuple[int, int] = (0, 0)  # (monotonic ns, wall ns) read together at its start
    failure: PlainFailure | None = None
    divergence: ScheduleDiverged | None = None
    uncontrolled: tuple[str, ...] = ()  # what the self-check saw outside control, a line each

    @property
    def failed(self) -> bool:
        return self.end in FAILURES

    @property
    def loose(self) -> tuple[int, ...]:
        """Steps after which code with no points ran beside the others (free mode): a
        replay takes every step in order, but cannot promise where that code ran."""
        return tuple(index for index, step in enumerate(self.steps) if step.loose)

    def who(self, worker: int) -> str:
        return self.processes[worker] if 0 <= worker < len(self.processes) else f"#{worker}"
