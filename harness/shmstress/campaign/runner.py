"""Campaigns: run every trial of a grid and append one record per trial to ``results.jsonl``.

A campaign directory holds ``campaign.json`` (the grid, with its ID and base seed),
``results.jsonl`` (every campaign run there, appended; nightly history is just
more campaigns in the same file) and ``bundles/<campaign>/``, the repro bundle of
each failing trial, which its record names relative to the directory. A SIGTERM or
Ctrl-C stops the campaign after the runner has torn down the trial in flight; that
trial is not recorded, every finished one is already on disk, and ``resume_spec`` +
``run_campaign`` finish the grid.

A failing trial's bundle is written (whole, renamed into place) before its results line.
A kill between the two leaves an *orphan* bundle: on resume it is adopted as its trial's
result (matched by seed, variant and mode), never re-run, since a rerun with the same seed
may well find nothing and would record the trial clean. A disk that fills up stops the
campaign with one line: nothing more could be kept.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from shmstress.campaign.bundles import (
    campaign_bundle_dir,
    campaign_bundle_path,
    swimlane_path,
    write_swimlane,
)
from shmstress.campaign.grid import GridSpec, TrialSpec, complete, every_trial, expand, located
from shmstress.campaign.record import adopted_record, outcome_of
from shmstress.campaign.results_file import Repair, ResultsFile
from shmstress.campaign.scenarios import check_scenario, run_scenario_trial
from shmstress.campaign.trial import TrialRun, campaign_record, run_trial
from shmstress.core.errors import BundleError, ConfigError, SegmentError
from shmstress.core.exit_reason import ExitReason
from shmstress.core.files import ArtifactError, write_text_atomically
from shmstress.core.provenance import Provenance, current_provenance
from shmstress.core.signals import interruptible, shielded
from shmstress.free.learning import Learning
from shmstress.plugin import registry
from shmstress.plugin.resolve import resolve
from shmstress.render.progress import CampaignProgress
from shmstress.repro.bundle import load_bundle, write_bundle

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
    warnings: tuple[str, ...] = ()  # corrupt lines skipped, orphan bundles adopted or not
    adopted: int = 0  # trials recorded from orphan bundles a kill left behind
    disk_error: str | None = None  # it stopped: no room for a record, bundle or trial's segments

    @property
    def remaining(self) -> int:
        return self.total - self.already_done - self.ran


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def prepare(spec: GridSpec) -> GridSpec:
    """Complete the grid from its tracker and check every configuration before anything runs
    (every shard's too: each shard of a grid that cannot run says so, as the whole would);
    a grid of scenarios checks that each one's file defines its function."""
    if spec.scenarios:
        for scenario in spec.scenarios:
            check_scenario(scenario, spec.origin)
        return complete(spec, None)
    tracker = registry.load(located(spec.tracker, spec.origin))
    spec = complete(spec, tracker)
    checked: set[str] = set()
    for trial in every_trial(spec):
        if trial.config_key not in checked:
            checked.add(trial.config_key)
            resolve(trial.run_config(), tracker)
    return spec


def save_spec(spec: GridSpec, out_dir: Path) -> Path:
    return write_text_atomically(out_dir / STATE_FILE, spec.to_json() + "\n", "the grid")


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
    """Trials of the grid (of its shard) not yet among the records, and how many already are."""
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
    learning: Learning | None = None,
) -> CampaignSummary:
    """Run the grid's pending trials in order, appending each finished one; stop on SIGTERM.
    ``learning``: what aimed noise learnt, carried from each trial to the next (and from
    the last campaign); None: every trial starts fresh."""
    spec = prepare(spec)
    save_spec(spec, out_dir)
    results = ResultsFile(out_dir / RESULTS_FILE)
    repaired = results.repair_tail()
    history = results.records()  # and this run's records as it appends them
    # once: every trial runs the same code (a scenario's record finds its own)
    provenance = None if spec.scenarios else current_provenance(
        located(spec.tracker, spec.origin))
    warnings = list(results.warnings)
    todo, _ = pending_trials(spec, history)
    with shielded():
        adopted, notes = adopt_orphans(spec, out_dir, todo, results, history)
    warnings += notes
    todo, already_done = pending_trials(spec, history)
    outcomes = {"violation": 0, "clean": 0, "error": 0}
    interrupted = False
    disk_error: str | None = None
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
            if interrupt.fired:  # this loop stops and says so: nothing left pending
                interrupt.acknowledge()
                interrupted = True
                break
            progress.start_trial(f"{trial.config_key} #{trial.trial}")
            started_at = utc_now()
            try:
                ran: RanTrial = (
                    run_scenario_trial(trial) if trial.scenario is not None
                    else _TrackerTrial(trial, run_trial(trial, progress=progress.tick,
                                                        learning=learning), provenance))
            except KeyboardInterrupt:
                interrupted = True
                break
            except SegmentError as exc:  # a full segment directory: as a full disk, stop
                disk_error = (f"{exc}; trial {trial.trial} of {trial.config_key} (seed "
                              f"{trial.seed}) could not run")
                break
            if ran.interrupted:
                interrupted = True  # torn down mid-trial: no verdict, resume reruns it
                break
            try:  # the bundle first: a kill before the line leaves an orphan to adopt
                record, kept_bundle = ran.keep(out_dir, started_at)
                results.append(record)
            except ArtifactError as exc:  # a full disk: nothing more could be kept
                disk_error = (f"{exc}; trial {trial.trial} of {trial.config_key} "
                              f"({ran.verdict()}, seed {trial.seed}) could not be recorded")
                break
            bundles += kept_bundle
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
        warnings=tuple(warnings),
        adopted=adopted,
        disk_error=disk_error,
    )


class RanTrial(Protocol):
    """A finished trial of either kind, a tracker's run or a scenario's exploration."""

    @property
    def interrupted(self) -> bool:
        """A signal tore it down: no verdict, and resume runs it again."""
        ...

    def verdict(self) -> str:
        """What it found, in a few words (for a line that says it could not be kept)."""
        ...

    def keep(self, out_dir: Path, started_at: str) -> tuple[dict[str, object], bool]:
        """Write its bundle and swimlane under ``out_dir`` (the bundle first); (its results
        line, whether a bundle was written)."""
        ...


@dataclass(frozen=True)
class _TrackerTrial:
    trial: TrialSpec
    ran: TrialRun
    provenance: Provenance | None

    @property
    def interrupted(self) -> bool:
        return self.ran.result.exit_reason is ExitReason.INTERRUPTED

    def verdict(self) -> str:
        found = self.ran.result.principal_violation
        return f"a {found.invariant} violation" if found else outcome_of(self.ran.result)

    def keep(self, out_dir: Path, started_at: str) -> tuple[dict[str, object], bool]:
        ran, bundle, picture = self.ran, None, None
        if ran.bundle is not None:
            bundle = campaign_bundle_path(self.trial.campaign, ran.bundle)
            write_bundle(ran.bundle, out_dir / bundle)
        report = ran.report(bundle.as_posix() if bundle else None)
        if bundle is not None and write_swimlane(
                report.swimlane, out_dir / swimlane_path(bundle)) is not None:
            picture = swimlane_path(bundle).as_posix()
        record = campaign_record(self.trial, ran, started_at, report, picture,
                                 self.provenance)
        return record, bundle is not None


def adopt_orphans(
    spec: GridSpec, out_dir: Path, todo: Sequence[TrialSpec], results: ResultsFile,
    history: list[dict[str, object]],
) -> tuple[int, list[str]]:
    """Record each bundle of this campaign that no results line names (a kill came between
    the two) as the result of its pending trial; returns how many, and notes for the user."""
    folder = out_dir / campaign_bundle_dir(spec.campaign)
    if not folder.is_dir():
        return 0, []
    for temporary in folder.glob(".*.tmp"):  # a bundle a kill cut off before its rename
        with contextlib.suppress(OSError):
            temporary.unlink()
    if not todo or spec.scenarios:
        # a scenario's controlled trial is its seed's search: run again, it finds the same
        # execution and writes the same bundle (a free one may not: it runs again anyway)
        return 0, []
    named = {str(r.get("bundle")) for r in history if r.get("campaign") == spec.campaign}
    pending = {(t.seed, t.variant, t.mode): t for t in todo}
    adopted, notes = 0, []
    for path in sorted(folder.glob("*.json")):
        relative = path.relative_to(out_dir).as_posix()
        if path.name.startswith(".") or relative in named:
            continue
        try:
            bundle = load_bundle(path)
        except BundleError as exc:
            notes.append(f"left alone an unreadable bundle no results line names: {exc}")
            continue
        trial = pending.pop((bundle.seed, bundle.variant, bundle.mode), None)
        if trial is None:
            notes.append(f"left alone {path}: no pending trial of campaign {spec.campaign} "
                         f"has its seed {bundle.seed}, variant and mode")
            continue
        record = adopted_record(trial, bundle, relative, utc_now())
        if (out_dir / swimlane_path(Path(relative))).is_file():  # drawn before the kill
            record["swimlane"] = swimlane_path(Path(relative)).as_posix()
        results.append(record)
        history.append(record)
        adopted += 1
        notes.append(f"adopted {relative} as the result of trial {trial.trial} of "
                     f"{trial.config_key}: a kill came between its bundle and its results line")
    return adopted, notes


def campaign_outcomes(campaign: str, records: Records) -> dict[str, int]:
    """Outcome counts over everything recorded for one campaign, across resumes and hosts."""
    counts = {"violation": 0, "clean": 0, "error": 0}
    for record in records:
        outcome = record.get("outcome")
        if record.get("campaign") == campaign and isinstance(outcome, str):
            counts[outcome] = counts.get(outcome, 0) + 1
    return counts
