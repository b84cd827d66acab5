"""One run, free or controlled, as a campaign trial or a ``shmstress_run`` call makes it:
its result, its repro bundle, its rerun command.

Both modes end in a RunResult, so records, reports and failure messages treat
them alike; what differs is how a trial runs, which bundle a failure yields and
the command that explores the same configuration again.
"""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.campaign.grid import CONTROLLED, TrialSpec
from shmstress.campaign.record import trial_record
from shmstress.controlled.result import ControlledResult
from shmstress.controlled.runner import run_controlled
from shmstress.core.config import RunConfig
from shmstress.core.provenance import Provenance
from shmstress.core.result import RunResult
from shmstress.free.learning import Learning
from shmstress.free.runner import ProgressFn, run
from shmstress.render.commands import run_command
from shmstress.render.failure import FailureReport, failure_report
from shmstress.render.summary import controlled_command, render_controlled, render_summary
from shmstress.repro.bundle import Bundle, from_controlled, from_free_run, tape_lost_note


@dataclass(frozen=True)
class TrialRun:
    result: RunResult
    bundle: Bundle | None  # None when the trial did not fail
    rerun_command: str  # same configuration and seed; a free run will not take the same schedule
    controlled: ControlledResult | None = None

    def summary(self) -> str:
        """The text ``shmstress run`` prints for this run."""
        if self.controlled is not None:
            return render_controlled(self.controlled)
        return render_summary(self.result)

    def report(self, bundle: str | None) -> FailureReport:
        """The failure report of this run; ``bundle`` as its reader will type it."""
        note = tape_lost_note(self.result) if bundle is not None else None
        return failure_report(self.result, bundle, self.rerun_command,
                              notes=(f"bundle: {note}",) if note else ())


def run_trial(trial: TrialSpec, progress: ProgressFn | None = None,
              learning: Learning | None = None) -> TrialRun:
    """Run one trial; ``progress`` ticks during a free run (controlled runs are short);
    ``learning``: where a free run's aimed noise starts from and saves to."""
    if trial.mode == CONTROLLED:
        controlled = run_controlled(trial.run_config(), trial.controlled_options())
        return TrialRun(
            controlled.run,
            from_controlled(controlled),
            controlled_command(controlled),
            controlled,
        )
    return run_free(trial.run_config(), progress, learning)


def run_free(config: RunConfig, progress: ProgressFn | None = None,
             learning: Learning | None = None) -> TrialRun:
    result = run(config, progress=progress, learning=learning)
    return TrialRun(result, from_free_run(result), run_command(result.config))


def campaign_record(
    trial: TrialSpec, ran: TrialRun, started_at: str, report: FailureReport | None,
    swimlane: str | None = None,
    provenance: Provenance | None = None,
) -> dict[str, object]:
    """The results.jsonl line of a campaign trial; ``report`` names the bundle and
    ``swimlane`` its picture relative to that file's directory; ``provenance``: the
    campaign's, computed once."""
    return trial_record(
        ran.result,
        campaign=trial.campaign,
        trial=trial.trial,
        started_at=started_at,
        report=report,
        key=trial.config_key,
        mode=trial.mode,
        strategy=trial.strategy,
        executions=trial.executions if trial.mode == CONTROLLED else None,
        swimlane=swimlane,
        provenance=provenance,
        tracker=trial.tracker,  # as the grid names it, where the run found its file
    )
