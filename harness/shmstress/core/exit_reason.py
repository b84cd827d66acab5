"""Why a run ended, and the one table of exit codes every command uses.

Every run ends with an ``ExitReason``, never with a bare traceback; every
command exits with an ``ExitCode``. The CLI's help and the documentation's exit-code
reference (generated at every build) print the table from here.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    CLEAN = 0
    FAILURE = 1
    USAGE = 2
    NOT_REPRODUCED = 3
    BROKEN = 4
    THIN_COVERAGE = 5
    NOT_CONTROLLED = 6
    LIMIT = 7
    LOG_MISMATCH = 8
    INTERRUPTED = 130
    OUTPUT_CLOSED = 141

    def describe(self) -> str:
        """What the code means, in one phrase."""
        return _MEANINGS[self][0]

    def advice(self) -> str:
        """What a nightly job should do with it."""
        return _MEANINGS[self][1]


_MEANINGS = {
    ExitCode.CLEAN: ("clean: no failure found in the executions that ran (all of a bounded "
                     "search's schedules, when it says it finished)",
                     "nothing; keep the report for the trend, and read its 'covered' line "
                     "for what was tried"),
    ExitCode.FAILURE: ("an invariant violation, a deadlock or no progress (a wait nobody "
                       "ends, a worker stuck inside a step) was found (replay: reproduced)",
                       "fail the job and keep the bundle: `shmstress replay` reproduces it"),
    ExitCode.USAGE: ("usage or configuration error: one line on stderr, nothing started; "
                     "or a clean run whose output could not be written (a full disk)",
                     "fix the command line, the tracker or the output location; a violation "
                     "found is still exit 1 whatever the disk says"),
    ExitCode.NOT_REPRODUCED: ("a replay diverged, or did not reproduce its violation",
                              "the bundle no longer stands for the failure: rerun with the "
                              "seed, or check for nondeterminism"),
    ExitCode.BROKEN: ("the run itself broke: a worker died without raising (a signal, "
                      "os._exit), was stopped, or did not return from a controlled step in "
                      "time; or a campaign did not finish its grid (a host lost, a full disk); "
                      "an exception the code raises, or a free worker stuck in it, is a "
                      "failure, 1",
                      "fail the job as an infrastructure error; the stacks are in the run's "
                      "log in --out; a campaign goes on with --resume"),
    ExitCode.THIN_COVERAGE: ("with --require-coverage: a clean search whose coverage was "
                             "thin (no role ever yielded, every execution cut at --max-steps, "
                             "or a bounded search the budget cut short)",
                             "read the run's 'thin coverage' line: raise --max-steps or "
                             "--executions, or make waiting roles yield"),
    ExitCode.NOT_CONTROLLED: ("not fully under control: no failure was found, but the "
                              "self-check saw shared memory change with no step, a shared "
                              "mapping or a thread shmstress does not control (each named in "
                              "one line), so the search did not see every interleaving",
                              "read the 'not under control' lines: trace the code they name "
                              "(--trace), or accept it knowingly (--accept-uncontrolled)"),
    ExitCode.LIMIT: ("a limit of shmstress was hit, not a bug: the scenario started more "
                     "processes than --max-processes, or made more shared objects, segments or "
                     "queued messages than the board holds (named in one line); no bundle",
                     "raise the limit the line names (--max-processes, --mailbox-mib) or "
                     "make the scenario smaller; the executions before it are reported"),
    ExitCode.LOG_MISMATCH: ("import-log: no execution of the model tried holds the log's "
                            "lines in their order; the first line none could produce, and "
                            "what the model did there instead, are printed",
                            "the model and the log disagree: read that line (a model "
                            "without the code path the log shows, or a log from another "
                            "version); --executions searches longer"),
    ExitCode.INTERRUPTED: ("interrupted by Ctrl-C or SIGTERM; workers and segments torn down; "
                           "what ran before it (executions, failures, coverage) is reported",
                           "the job was cancelled; finished trials are kept (campaign --resume)"),
    ExitCode.OUTPUT_CLOSED: ("the reader of the output went away (`| head`); the run was "
                             "stopped and torn down, as a shell stops a command by SIGPIPE",
                             "nothing, if the pipe was closed on purpose; read the whole output "
                             "or the report in --out"),
}


def exit_code_table() -> str:
    """``exit codes: 0 clean: ..., 1 ...``: the help epilog every command prints."""
    return "exit codes:\n" + "\n".join(f"  {code.value:>3}  {code.describe()}" for code in ExitCode)


class ExitReason(enum.Enum):
    DURATION_REACHED = "duration-reached"
    POINTS_REACHED = "points-reached"
    ROLES_FINISHED = "roles-finished"
    VIOLATION = "violation"
    WORKER_CRASHED = "worker-crashed"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"
    # controlled mode
    DEADLOCK = "deadlock"
    NO_PROGRESS = "no-progress"
    EXECUTIONS_DONE = "executions-done"
    SEARCH_COMPLETE = "search-complete"
    STEP_BOUND = "step-bound"
    DIVERGED = "diverged"

    def describe(self) -> str:
        return _DESCRIPTIONS[self]

    @property
    def exit_code(self) -> ExitCode:
        return _EXIT_CODES[self]


_DESCRIPTIONS = {
    ExitReason.DURATION_REACHED: "ran for the requested duration, settled, and checked at rest",
    ExitReason.POINTS_REACHED: "reached the requested points, settled, and checked at rest",
    ExitReason.ROLES_FINISHED: "every worker finished its role before the duration or the "
                               "points ran out; settled, and checked at rest",
    ExitReason.VIOLATION: "stopped at the first invariant violation",
    ExitReason.WORKER_CRASHED: "a worker process died without raising (a signal, os._exit)",
    ExitReason.TIMEOUT: "a worker's process was stopped (a signal) or a controlled step did "
                        "not return in time; stacks dumped, workers killed",
    ExitReason.INTERRUPTED: "Ctrl-C or SIGTERM; workers torn down",
    ExitReason.DEADLOCK: "every unfinished worker waits for a lock another one holds",
    ExitReason.NO_PROGRESS: "an execution reached --max-steps and could not go on: every "
                            "unfinished worker spins or waits, and nothing changes",
    ExitReason.EXECUTIONS_DONE: "ran every execution of its budget (--executions)",
    ExitReason.SEARCH_COMPLETE: "the bounded search had no schedule left: every schedule "
                                "within its bound ran",
    ExitReason.STEP_BOUND: "ran every execution; some reached --max-steps before finishing",
    ExitReason.DIVERGED: "the replay left the recorded schedule",
}

_EXIT_CODES = {
    ExitReason.DURATION_REACHED: ExitCode.CLEAN,
    ExitReason.POINTS_REACHED: ExitCode.CLEAN,
    ExitReason.ROLES_FINISHED: ExitCode.CLEAN,
    ExitReason.VIOLATION: ExitCode.FAILURE,
    ExitReason.WORKER_CRASHED: ExitCode.BROKEN,
    ExitReason.TIMEOUT: ExitCode.BROKEN,
    ExitReason.INTERRUPTED: ExitCode.INTERRUPTED,
    ExitReason.DEADLOCK: ExitCode.FAILURE,
    ExitReason.NO_PROGRESS: ExitCode.FAILURE,
    ExitReason.EXECUTIONS_DONE: ExitCode.CLEAN,
    ExitReason.SEARCH_COMPLETE: ExitCode.CLEAN,
    ExitReason.STEP_BOUND: ExitCode.CLEAN,
    ExitReason.DIVERGED: ExitCode.NOT_REPRODUCED,
}
