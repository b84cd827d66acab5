"""Campaigns: run every trial of a grid and append one record per trial to ``results.jsonl``.

A campaign directory holds ``campaign.json`` (the grid, with its ID and base seed),
``results.jsonl`` (every campaign run there, appended; nightly history is just
more campaigns in the same file) and ``bundles/<campaign>/``, the repro bundle of
each failing trial, which its record names relative to the directory. A SIGTERM or
Ctrl-C stops the campaign after the runner has torn down the trial in flight; that
trial is not recorded, every finished one is already on disk, and ``resume_spec`` +
``run_campaign`` finish the grid.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from shmstress.campaign.bundles import campaign_bundle_path
from shmstress.campaign.grid import GridSpec, TrialSpec, complete, expand
from shmstress.campaign.results_file import Repair, ResultsFile
from shmstress.campaign.trial import campaign_record, run_trial
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import ExitReason
from shmstress.core.signals import interruptible, shielded
from shmstress.plugin import registry
from shmstress.plugin.resolve import resolve
from shmstress.render.progress import CampaignProgress
from shmstress.repro.bundle import write_bundle

STATE_FILE = "campaign.json"
RESULTS_FILE = "results.jsonl"


@dataclass(frozen=True)
class CampaignSummary:
    """What one invocation did, and what the campaign as a whole has found so far."""

    spec: GridSpec
    results: Path
    total: int
    already_done: int
    ran: int
    outcomes: dict[str, int]
    interrupted: bool
    bundles: int = 0
    unexpected_violations: tuple[str, ...] = ()
    repaired: Repair | None = None

    @property
    def remaining(self) -> int:
        return self.total - self.already_done - self.ran


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def prepare(spec: GridSpec) -> GridSpec:
    """Complete the grid from its tracker and check every configuration before anything runs."""
    tracker = registry.load(spec.tracker)
    spec = complete(spec, tracker)
    checked: set[str] = set()
    for trial in expand(spec):
        if trial.config_key not in checked:
            checked.add(trial.config_key)
            resolve(trial.run_config(), tracker)
    return spec


def save_spec(spec: GridSpec, out_dir: Path) -> Path:
    path = out_dir / STATE_FILE
    tmp = path.with_suffix(".json.tmp")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp.write_text(spec.to_json() + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from exc
    return path


def resume_spec(out_dir: Path) -> GridSpec:
    """The grid of the campaign last started in ``out_dir``."""
    path = out_dir / STATE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"nothing to resume: {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    return GridSpec.from_json(text)


Records = Sequence[Mapping[str, object]]
"""results.jsonl as ``ResultsFile.records`` reads it: once per invocation, as nightly
history keeps growing the file."""


def pending_trials(spec: GridSpec, records: Records) -> tuple[list[TrialSpec], int]:
    """Trials of the grid not yet among the records, and how many already are."""
    done = {
        (r.get("config_key"), r.get("trial")) for r in records if r.get("campaign") == spec.campaign
    }
    trials = expand(spec)
    todo = [t for t in trials if t.trial_id not in done]
    return todo, len(trials) - len(todo)


def unexpected_violations(spec: GridSpec, records: Records) -> tuple[str, ...]:
    """Configurations of variants declared correct that nevertheless saw a violation."""
    if not spec.expect_clean:
        return ()
    keys = {
        str(r.get("config_key"))
        for r in records
        if r.get("campaign") == spec.campaign
        and r.get("variant") in spec.expect_clean
        and r.get("outcome") == "violation"
    }
    return tuple(sorted(keys))


def run_campaign(
    spec: GridSpec,
    out_dir: Path,
    *,
    progress_enabled: bool = True,
    heartbeat_s: float = 30.0,
) -> CampaignSummary:
    """Run the grid's pending trials in order, appending each finished one; stop on SIGTERM."""
    spec = prepare(spec)
    save_spec(spec, out_dir)
    results = ResultsFile(out_dir / RESULTS_FILE)
    repaired = results.repair_tail()
    history = results.records()  # and this run's records as it appends them
    todo, already_done = pending_trials(spec, history)
    outcomes = {"violation": 0, "clean": 0, "error": 0}
    interrupted = False
    bundles = 0
    total = len(todo) + already_done
    progress = CampaignProgress(
        total,
        already_done,
        campaign_outcomes(spec.campaign, history),
        enabled=progress_enabled,
        heartbeat_s=heartbeat_s,
    )
    # The bookkeeping between trials is shielded: a signal there only sets the flag, so a
    # results line is never cut from its bundle; each trial's run is interruptible.
    with interruptible() as interrupt, shielded(), progress:
        for trial in todo:
            if interrupt.fired:
                interrupted = True
                break
            progress.start_trial(f"{trial.config_key} #{trial.trial}")
            started_at = utc_now()
            try:
                ran = run_trial(trial, progress=progress.tick)
            except KeyboardInterrupt:
                interrupted = True
                break
            if ran.result.exit_reason is ExitReason.INTERRUPTED:
                interrupted = True  # torn down mid-trial: no verdict, resume reruns it
                break
            bundle = None
            if ran.bundle is not None:
                bundle = campaign_bundle_path(spec.campaign, ran.bundle)
                write_bundle(ran.bundle, out_dir / bundle)
                bundles += 1
            report = ran.report(bundle.as_posix() if bundle else None)
            record = campaign_record(trial, ran, started_at, report)
            results.append(record)
            history.append(record)
            outcome = str(record["outcome"])
            outcomes[outcome] += 1
            progress.trial_done(outcome)
    return CampaignSummary(
        spec=spec,
        results=results.path,
        total=total,
        already_done=already_done,
        ran=sum(outcomes.values()),
        outcomes=outcomes,
        interrupted=interrupted,
        bundles=bundles,
        unexpected_violations=unexpected_violations(spec, history),
        repaired=repaired,
    )


def campaign_outcomes(campaign: str, records: Records) -> dict[str, int]:
    """Outcome counts over everything recorded for one campaign, across resumes and hosts."""
    counts = {"violation": 0, "clean": 0, "error": 0}
    for record in records:
        outcome = record.get("outcome")
        if record.get("campaign") == campaign and isinstance(outcome, str):
            counts[outcome] = counts.get(outcome, 0) + 1
    return counts
