"""One trial as a ``results.jsonl`` record: the single place a RunResult becomes report data.

The schema is the one ``reports/results.py`` reads (see its module docstring); keys
beyond it (``host``, ``runner``, ``test``, ``config.roles``, ``config.params``) are
ignored by older readers. Failure artifacts (bundle, log snippet, explanation, the
commands that bring a failure back) are gathered in ``failure_artifacts``.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from shmstress.campaign.grid import FREE, config_key, trial_kind
from shmstress.core.errors import ShmstressError
from shmstress.core.exit_reason import ExitReason
from shmstress.core.result import RunResult, Violation
from shmstress.plugin import registry
from shmstress.repro.bundle import replay_command as bundle_replay_command
from shmstress.repro.bundle import tape_lost_note

Outcome = Literal["violation", "clean", "error"]

_BROKEN_RUN = (ExitReason.WORKER_CRASHED, ExitReason.TIMEOUT, ExitReason.INTERRUPTED)


@dataclass(frozen=True)
class FailureArtifacts:
    """What a user needs to chase a failure offline.

    ``bundle`` is the path as the reader of the record or message should type it.
    """

    bundle: str | None
    log_snippet: str | None
    explanation: str | None
    rerun_command: str
    problems: tuple[str, ...] = ()

    @property
    def replay_command(self) -> str:
        """The exact schedule again when there is a bundle; else the seeded rerun."""
        return bundle_replay_command(Path(self.bundle)) if self.bundle else self.rerun_command


def outcome_of(result: RunResult) -> Outcome:
    """A violation is a verdict even if the run broke afterwards; a broken clean run is not."""
    if result.violation_count:
        return "violation"
    if result.exit_reason in _BROKEN_RUN:
        return "error"
    return "clean"


def failure_artifacts(
    result: RunResult, bundle: str | None, rerun_command: str
) -> FailureArtifacts:
    """Log snippet, explanation and the commands that bring the failure back.

    A broken explainer must not cost a nightly campaign its remaining trials, so its
    errors are kept as ``problems`` (recorded as ``artifact_problems``) instead of raised.
    """
    first = result.principal_violation
    problems: list[str] = []
    snippet: str | None = None
    explanation: str | None = None
    if first is not None and result.recording is not None:
        from shmstress.analysis.explain import explain
        from shmstress.render.explanation import render_explanation
        from shmstress.render.logview import render_snippet

        try:
            snippet = render_snippet(result, first) or None
        except Exception as exc:
            problems.append(f"log snippet: {type(exc).__name__}: {exc}")
        try:
            found = explain(result, first)
            explanation = render_explanation(found) if found is not None else None
        except Exception as exc:
            problems.append(f"explanation: {type(exc).__name__}: {exc}")
    note = tape_lost_note(result)
    if bundle is not None and note:
        problems.append(f"bundle: {note}")
    return FailureArtifacts(
        bundle=bundle,
        log_snippet=snippet,
        explanation=explanation,
        rerun_command=rerun_command,
        problems=tuple(problems),
    )


def violation_message(result: RunResult, violation: Violation) -> str:
    """The invariant's own summary, then this trial's details.

    Reports group failures by their first line, so it must name the bug, not the
    pids, points and devices of one occurrence.
    """
    try:
        tracker = registry.load(result.config.tracker)
    except ShmstressError:
        return violation.message
    summaries = {inv.name: inv.summary for inv in tracker.invariants}
    summary = summaries.get(violation.invariant)
    return f"{summary}\n{violation.message}" if summary else violation.message


def result_config_key(result: RunResult, params: Mapping[str, int] | None = None) -> str:
    """The key of a free run made outside a grid; ``params`` are those set on purpose.

    A resolved config carries every parameter, defaults included, so naming them all
    would make every key long and hide the one knob that differs.
    """
    config = result.config
    noise = config.noise.probability
    mode, strategy = trial_kind(FREE, noise)
    return config_key(
        config.tracker, config.variant or "", config.counts, mode, strategy, noise, params or {}
    )


def trial_record(
    result: RunResult,
    *,
    campaign: str,
    trial: int | None,
    started_at: str,
    artifacts: FailureArtifacts,
    key: str | None = None,
    mode: str = FREE,
    strategy: str | None = None,
    executions: int | None = None,
    extra: dict[str, object] | None = None,
) -> dict[str, object]:
    """The JSON object appended to results.jsonl for one finished run.

    ``artifacts`` (recorded unless the run was clean) name the bundle relative to the
    directory of results.jsonl; ``strategy`` defaults to what drives a free run (noise
    or none); ``executions`` is a controlled run's budget.
    """
    config = result.config
    counts = dict(config.counts)
    params = dict(config.params)
    outcome = outcome_of(result)
    first = result.principal_violation
    recorded = artifacts if outcome != "clean" else None
    record: dict[str, object] = {
        "campaign": campaign,
        "started_at": started_at,
        "trial": trial,
        "tracker": config.tracker,
        "variant": config.variant,
        "config": {
            "binders": counts.get("binder", 0),
            "informers": counts.get("informer", 0),
            "gatherers": counts.get("gatherer", 0),
            "nodes": params.get("nodes"),
            "devices_per_node": params.get("devices-per-node"),
            "noise": config.noise.probability,
            "mode": mode,
            "strategy": strategy or trial_kind(FREE, config.noise.probability)[1],
            "duration": config.duration,
            "executions": executions,
            "roles": counts,
            "params": params,
        },
        "config_key": key if key is not None else result_config_key(result),
        "seed": config.seed,
        "outcome": outcome,
        "exit_reason": result.exit_reason.value,
        "time_to_violation_s": first.elapsed_s if first is not None else None,
        "points_to_violation": first.seq if first is not None else None,
        "points": result.points,
        "points_per_s": result.points_per_s,
        "elapsed_s": result.elapsed_s,
        "violation": (
            {"invariant": first.invariant, "message": violation_message(result, first)}
            if first is not None
            else None
        ),
        "bundle": recorded.bundle if recorded else None,
        "log_snippet": recorded.log_snippet if recorded else None,
        "explanation": recorded.explanation if recorded else None,
        "replay_command": recorded.replay_command if recorded else None,
        "rerun_command": recorded.rerun_command if recorded else None,
        "artifact_problems": list(recorded.problems) if recorded else [],
        "host": socket.gethostname(),
        "runner": os.environ.get("PYTEST_XDIST_WORKER", "local"),
    }
    if extra:
        record.update(extra)
    return record
