"""One trial as a ``results.jsonl`` record: the single place a RunResult becomes report data.

The schema is the one ``reports/results.py`` reads (see its module docstring); keys
beyond it (``host``, ``runner``, ``test``, ``config.roles``, ``config.params``) are
ignored by older readers. Failure artifacts (bundle, log snippet, explanation) are
gathered in ``failure_artifacts`` so the log and replay features plug in there once.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from harness import registry
from harness.commands import run_command
from harness.errors import ShmstressError
from harness.exit_reason import ExitReason
from harness.grid import FREE, config_key, strategy_for
from harness.result import RunResult, Violation

Outcome = Literal["violation", "clean", "error"]

_BROKEN_RUN = (ExitReason.WORKER_CRASHED, ExitReason.TIMEOUT, ExitReason.INTERRUPTED)


@dataclass(frozen=True)
class FailureArtifacts:
    """What a user needs to chase a failure offline."""

    bundle: str | None
    log_snippet: str | None
    explanation: str | None
    replay_command: str
    problems: tuple[str, ...] = ()


def outcome_of(result: RunResult) -> Outcome:
    """A violation is a verdict even if the run broke afterwards; a broken clean run is not."""
    if result.violation_count:
        return "violation"
    if result.exit_reason in _BROKEN_RUN:
        return "error"
    return "clean"


def failure_artifacts(result: RunResult) -> FailureArtifacts:
    """Log snippet, explanation and the command that brings the failure back.

    A broken explainer must not cost a nightly campaign its remaining trials, so its
    errors are kept as ``problems`` (recorded as ``artifact_problems``) instead of raised.
    The bundle stays None until free-mode failures are saved as replayable bundles.
    """
    from harness.explain import explain, render_explanation
    from harness.logview import render_snippet

    first = result.first_violation
    problems: list[str] = []
    snippet: str | None = None
    explanation: str | None = None
    if first is not None and result.recording is not None:
        try:
            snippet = render_snippet(result, first) or None
        except Exception as exc:
            problems.append(f"log snippet: {type(exc).__name__}: {exc}")
        try:
            found = explain(result, first)
            explanation = render_explanation(found) if found is not None else None
        except Exception as exc:
            problems.append(f"explanation: {type(exc).__name__}: {exc}")
    return FailureArtifacts(
        bundle=None,
        log_snippet=snippet,
        explanation=explanation,
        replay_command=run_command(result.config),
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


def result_config_key(
    result: RunResult, mode: str = FREE, params: Mapping[str, int] | None = None
) -> str:
    """The key of a run made outside a grid; ``params`` are those set on purpose.

    A resolved config carries every parameter, defaults included, so naming them all
    would make every key long and hide the one knob that differs.
    """
    config = result.config
    noise = config.noise.probability
    return config_key(
        config.tracker,
        config.variant or "",
        config.counts,
        mode,
        strategy_for(mode, noise),
        noise,
        params or {},
    )


def trial_record(
    result: RunResult,
    *,
    campaign: str,
    trial: int | None,
    started_at: str,
    key: str | None = None,
    mode: str = FREE,
    extra: dict[str, object] | None = None,
) -> dict[str, object]:
    """The JSON object appended to results.jsonl for one finished run."""
    config = result.config
    counts = dict(config.counts)
    params = dict(config.params)
    outcome = outcome_of(result)
    first = result.first_violation
    artifacts = failure_artifacts(result) if outcome != "clean" else None
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
            "strategy": strategy_for(mode, config.noise.probability),
            "duration": config.duration,
            "roles": counts,
            "params": params,
        },
        "config_key": key if key is not None else result_config_key(result, mode),
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
        "bundle": artifacts.bundle if artifacts else None,
        "log_snippet": artifacts.log_snippet if artifacts else None,
        "explanation": artifacts.explanation if artifacts else None,
        "replay_command": artifacts.replay_command if artifacts else None,
        "artifact_problems": list(artifacts.problems) if artifacts else [],
        "host": socket.gethostname(),
        "runner": os.environ.get("PYTEST_XDIST_WORKER", "local"),
    }
    if extra:
        record.update(extra)
    return record
