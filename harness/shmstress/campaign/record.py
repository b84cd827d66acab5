"""One trial as a ``results.jsonl`` record: the single place a RunResult, or a plain-code
scenario's exploration (a ``PlainResult``), becomes report data.

The schema, with its version, is ``shmstress.reports.schema`` (the reports read it
and own it). A failing trial's record carries its ``FailureReport`` (bundle, log
snippet, explanation, the commands that bring the failure back), and every record
carries its provenance (shmstress and Python versions, host, the commit of the code
under test), so a point of a nightly trend can say what it tested.
"""

from __future__ import annotations

import os
import shlex
import socket
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, TypedDict

import msgspec

from shmstress.campaign.grid import (
    CONTROLLED,
    FREE,
    TrialSpec,
    config_key,
    scenario_key,
    trial_kind,
)
from shmstress.core.exit_reason import ExitCode, ExitReason
from shmstress.core.provenance import Provenance, current_provenance
from shmstress.core.result import RunResult, Violation
from shmstress.core.trace import step_number
from shmstress.plain.outcome import PlainEnd
from shmstress.plain.runner import PlainResult
from shmstress.render.commands import run_command
from shmstress.render.failure import FailureReport
from shmstress.render.plain_report import outcome_lines
from shmstress.reports import schema
from shmstress.repro.bundle import Bundle, replay_command

Outcome = Literal["violation", "clean", "error"]

_BROKEN_RUN = (ExitReason.WORKER_CRASHED, ExitReason.TIMEOUT, ExitReason.INTERRUPTED)
_REASONS = {"deadlock": ExitReason.DEADLOCK, "no-progress": ExitReason.NO_PROGRESS}
"""Invariant names the harness reports stuck executions under, and their exit reasons."""


def outcome_of(result: RunResult) -> Outcome:
    """A violation is a verdict even if the run broke afterwards; a broken clean run is not."""
    if result.violation_count:
        return "violation"
    if result.exit_reason in _BROKEN_RUN:
        return "error"
    return "clean"


def result_config_key(result: RunResult, params: Mapping[str, int] | None = None) -> str:
    """The key of a free run made outside a grid; ``params`` are those set on purpose.

    A resolved config carries every parameter, defaults included, so naming them all
    would make every key long and hide the one knob that differs.
    """
    config = result.config
    noise = config.noise.probability
    mode, strategy = trial_kind(FREE, noise)
    return config_key(
        config.tracker, config.variant or "", config.counts, mode, strategy, noise, params or {},
        config.noise.policy,
    )


def detection(result: RunResult, first: Violation | None) -> tuple[float | None, int | None]:
    """(seconds, points) to the first violation. A violation found at rest was found when
    the run ended, checking the state every worker left: its detection time is the run's
    whole time and its points all the points, never "unknown" (a trial that found its
    violation must count as a detection in every chart and table, with a time)."""
    if first is None:
        return None, None
    points = None if first.seq is None else step_number(first.seq)  # as "at point N" says
    if first.at_rest:
        return (first.elapsed_s if first.elapsed_s is not None else result.elapsed_s,
                points if points is not None else result.points)
    return first.elapsed_s, points


def trial_record(
    result: RunResult,
    *,
    campaign: str,
    trial: int | None,
    started_at: str,
    report: FailureReport | None,
    key: str | None = None,
    mode: str = FREE,
    strategy: str | None = None,
    executions: int | None = None,
    extra: dict[str, object] | None = None,
    swimlane: str | None = None,
    provenance: Provenance | None = None,
    tracker: str | None = None,
) -> dict[str, object]:
    """The JSON object appended to results.jsonl for one finished run: a record of the
    current results schema (``shmstress.reports.schema``), plus the keys of ``extra``.

    ``report`` (recorded unless the run was clean) names the bundle relative to the
    directory of results.jsonl; ``strategy`` defaults to free mode's; ``executions`` is a
    controlled run's budget; ``swimlane`` names the failure's SVG picture relative to the
    directory of results.jsonl, as ``bundle`` does; ``provenance`` is computed for this run
    unless given (a campaign computes it once); ``tracker`` names the tracker as a grid
    does, where the run's config may have located its file.
    """
    config = result.config
    outcome = outcome_of(result)
    first = result.principal_violation
    found = provenance or current_provenance(config.tracker)
    seconds, points = detection(result, first)
    recorded = report if outcome != "clean" else None
    record = schema.Record(
        schema=schema.SCHEMA_VERSION,
        campaign=campaign,
        started_at=started_at,
        trial=trial,
        tracker=tracker if tracker is not None else config.tracker,
        variant=config.variant or "",
        config=schema.Config(
            workers=dict(config.counts),
            params=dict(config.params),
            noise=config.noise.probability,
            noise_policy=config.noise.policy if mode == FREE else None,
            mode=mode,
            strategy=strategy or trial_kind(FREE, config.noise.probability)[1],
            duration=config.duration,
            executions=executions,
        ),
        config_key=key if key is not None else result_config_key(result),
        seed=config.seed,
        outcome=outcome,
        exit_reason=result.exit_reason.value,
        time_to_violation_s=seconds,
        points_to_violation=points,
        time_to_violation_after_startup_s=result.first_after_startup_s,
        startup_s=result.startup_s,
        interleaving_coverage=result.coverage,
        targeted_pairs=result.aim.targeted_pairs if result.aim is not None else None,
        learnt_pairs=result.aim.learnt_pairs if result.aim is not None else None,
        points=result.points,
        points_per_s=result.points_per_s,
        elapsed_s=result.elapsed_s,
        violation=(
            schema.Violation(invariant=first.invariant,
                             message=recorded.message if recorded else first.message,
                             at_rest=first.at_rest, fields=dict(first.fields))
            if first is not None
            else None
        ),
        bundle=recorded.bundle if recorded else None,
        log_snippet=recorded.snippet if recorded else None,
        explanation=recorded.explanation if recorded else None,
        swimlane=swimlane if recorded else None,
        replay_command=recorded.replay_command if recorded else None,
        rerun_command=recorded.rerun_command if recorded else None,
        artifact_problems=list(recorded.problems) if recorded else [],
        **_ran_here(found),
    )
    return _line(record, extra)


_PLAIN_REASONS = {PlainEnd.FAILED: ExitReason.VIOLATION, PlainEnd.DEADLOCK: ExitReason.DEADLOCK,
                  PlainEnd.NO_PROGRESS: ExitReason.NO_PROGRESS, PlainEnd.HUNG: ExitReason.TIMEOUT}
"""A failing execution's end, as the exit reason a tracker trial that ended so records."""


def scenario_outcome(result: PlainResult, accept_uncontrolled: bool = False
                     ) -> tuple[Outcome, str]:
    """(outcome, exit reason): a failing execution is a violation; a search that hit a limit
    of shmstress, hung, was interrupted or saw code outside control (unless accepted) has
    no verdict, an error, as a tracker run that broke."""
    failing = result.failing
    if failing is not None and failing.failed:
        return "violation", _PLAIN_REASONS[failing.end].value
    code = result.exit_code
    if code is ExitCode.INTERRUPTED:
        return "error", ExitReason.INTERRUPTED.value
    if code is ExitCode.LIMIT:
        return "error", PlainEnd.LIMIT.value
    if code is ExitCode.BROKEN:
        return "error", ExitReason.TIMEOUT.value
    if code is ExitCode.NOT_CONTROLLED and not accept_uncontrolled:
        return "error", "not-controlled"
    done = ExitReason.SEARCH_COMPLETE if result.exhausted else ExitReason.EXECUTIONS_DONE
    return "clean", done.value


def scenario_record(
    result: PlainResult,
    *,
    scenario: str,
    campaign: str,
    trial: int | None,
    started_at: str,
    bundle: str | None,
    swimlane: str | None = None,
    rerun_command: str | None = None,
    accept_uncontrolled: bool = False,
    extra: dict[str, object] | None = None,
    results_dir: Path | None = None,
) -> dict[str, object]:
    """The results line of one exploration of the plain-code ``scenario`` (``FILE:function``,
    the file as its user names it): the schema of a tracker trial's record, with
    ``scenario`` set, its file as the tracker and its function as the variant, so the
    reports count, group and chart it as they do a tracker's trials.

    ``bundle`` and ``swimlane`` are relative to the directory of results.jsonl, as in
    ``trial_record``; the search stops at its first failing execution, so the time and
    steps to the violation are the search's own. Its replay command, run from
    ``results_dir`` as every record's is, names the scenario's file with ``--code``
    (relative to that directory): a bundle imports code only from the directory it is
    replayed in unless told, and the scenario's project is rarely below its results.
    """
    file, _, function = scenario.rpartition(":")
    exploration = result.exploration
    free = result.spec.free
    mode = FREE if free is not None else CONTROLLED
    strategy = FREE if free is not None else exploration.strategy.name
    noise = free.noise if free is not None else 0.0
    outcome, reason = scenario_outcome(result, accept_uncontrolled)
    failing = result.failing
    failure = failing.failure if failing is not None and outcome == "violation" else None
    found = current_provenance(result.spec.scenario.describe())
    record = schema.Record(
        schema=schema.SCHEMA_VERSION,
        campaign=campaign,
        started_at=started_at,
        trial=trial,
        tracker=file,
        variant=function,
        scenario=scenario,
        config=schema.Config(workers={}, params={}, noise=noise, mode=mode, strategy=strategy,
                             executions=exploration.executions),
        config_key=scenario_key(scenario, mode, strategy, noise),
        seed=exploration.seed,
        outcome=outcome,
        exit_reason=reason,
        time_to_violation_s=result.elapsed_s if failure is not None else None,
        points_to_violation=result.steps if failure is not None else None,
        points=result.steps,
        points_per_s=result.steps / result.elapsed_s if result.elapsed_s > 0 else None,
        elapsed_s=result.elapsed_s,
        violation=None if failure is None else schema.Violation(
            invariant=(failure.message.split(":", 1)[0] if failure.end is PlainEnd.FAILED
                       else failure.end.value),
            message=failure.message),
        bundle=bundle if failure is not None else None,
        explanation=("\n".join(outcome_lines(failing))
                     if failure is not None and failing is not None else None),
        swimlane=swimlane if failure is not None else None,
        replay_command=(replay_command(Path(bundle), *_code_option(result, results_dir))
                        if failure is not None and bundle is not None else None),
        rerun_command=rerun_command,
        **_ran_here(found),
    )
    return _line(record, extra)


def adopted_record(
    trial: TrialSpec, bundle: Bundle, bundle_path: str, recorded_at: str
) -> dict[str, object]:
    """The results line of a trial whose bundle was written but whose line was not (a kill
    between the two), made from the bundle on resume: the violation and the commands are
    all there; the timings, the points and the log snippet went with the killed process."""
    config = replace(trial.run_config(), counts=dict(bundle.counts), params=dict(bundle.params))
    rerun = run_command(config, free=trial.mode != CONTROLLED)
    if trial.mode == CONTROLLED:
        options = trial.controlled_options()
        rerun += " " + shlex.join(["--mode", "controlled", "--strategy", trial.strategy,
                                   "--executions", str(options.executions)])
    violation = bundle.violation
    record = schema.Record(
        schema=schema.SCHEMA_VERSION,
        campaign=trial.campaign,
        started_at=recorded_at,
        trial=trial.trial,
        tracker=trial.tracker,
        variant=trial.variant,
        config=schema.Config(
            workers=dict(bundle.counts),
            params=dict(bundle.params),
            noise=trial.noise if trial.mode == FREE else 0.0,
            noise_policy=trial.noise_policy if trial.mode == FREE else None,
            mode=trial.mode,
            strategy=trial.strategy,
            duration=trial.duration,
            executions=trial.executions if trial.mode == CONTROLLED else None,
        ),
        config_key=trial.config_key,
        seed=trial.seed,
        outcome="violation",
        exit_reason=_REASONS.get(violation.invariant, ExitReason.VIOLATION).value,
        violation=schema.Violation(invariant=violation.invariant, message=violation.message,
                                   at_rest=violation.at_rest, fields=dict(violation.fields)),
        bundle=bundle_path,
        replay_command=replay_command(Path(bundle_path)),
        rerun_command=rerun,
        artifact_problems=[
            "recorded on resume from its bundle: the campaign was killed between the bundle "
            "and its results line, so the time, points and log snippet are lost (replay the "
            "bundle for its log and explanation)"
        ],
        host=bundle.host or socket.gethostname(),
        runner="local",
        # what the killed trial ran with, as its bundle says (absent from older bundles)
        shmstress_version=bundle.package_version,
        python_version=bundle.python_version,
        code_commit=bundle.code_commit,
    )
    return _line(record)


class _RanHere(TypedDict):
    host: str
    runner: str
    shmstress_version: str
    python_version: str
    code_commit: str | None


def _ran_here(found: Provenance) -> _RanHere:
    """The fields that say where and with what a trial ran here: the host, the xdist worker
    (or "local"), the versions and the code's commit."""
    return _RanHere(host=found.host, runner=os.environ.get("PYTEST_XDIST_WORKER", "local"),
                    shmstress_version=found.shmstress_version,
                    python_version=found.python_version, code_commit=found.code_commit)


def _line(record: schema.Record[Any], extra: dict[str, object] | None = None
          ) -> dict[str, object]:
    """The record as a results line (its schema's fields), with ``extra`` keys added."""
    data: dict[str, object] = msgspec.to_builtins(record)
    if extra:
        data.update(extra)
    return data


def _code_option(result: PlainResult, results_dir: Path | None) -> tuple[str, ...]:
    """``--code FILE`` naming the scenario's file relative to ``results_dir``; nothing for a
    module found on ``sys.path`` (installed: a bundle may import it) or no directory."""
    file = result.spec.scenario.file
    if file is None or results_dir is None:
        return ()
    return ("--code", os.path.relpath(file, results_dir.resolve()))
