"""One trial as a ``results.jsonl`` record: the single place a RunResult becomes report data.

The schema, with its version, is ``shmstress.reports.schema`` (the reports read it
and own it). A failing trial's record carries its ``FailureReport`` (bundle, log
snippet, explanation, the commands that bring the failure back).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Literal

import msgspec

from shmstress.campaign.grid import FREE, config_key, trial_kind
from shmstress.core.exit_reason import ExitReason
from shmstress.core.result import RunResult
from shmstress.render.failure import FailureReport
from shmstress.reports import schema

Outcome = Literal["violation", "clean", "error"]

_BROKEN_RUN = (ExitReason.WORKER_CRASHED, ExitReason.TIMEOUT, ExitReason.INTERRUPTED)


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
        config.tracker, config.variant or "", config.counts, mode, strategy, noise, params or {}
    )


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
) -> dict[str, object]:
    """The JSON object appended to results.jsonl for one finished run: a record of the
    current results schema (``shmstress.reports.schema``), plus the keys of ``extra``.

    ``report`` (recorded unless the run was clean) names the bundle relative to the
    directory of results.jsonl; ``strategy`` defaults to what drives a free run (noise
    or none); ``executions`` is a controlled run's budget.
    """
    config = result.config
    outcome = outcome_of(result)
    first = result.principal_violation
    recorded = report if outcome != "clean" else None
    record = schema.Record(
        schema=schema.SCHEMA_VERSION,
        campaign=campaign,
        started_at=started_at,
        trial=trial,
        tracker=config.tracker,
        variant=config.variant or "",
        config=schema.Config(
            workers=dict(config.counts),
            params=dict(config.params),
            noise=config.noise.probability,
            mode=mode,
            strategy=strategy or trial_kind(FREE, config.noise.probability)[1],
            duration=config.duration,
            executions=executions,
        ),
        config_key=key if key is not None else result_config_key(result),
        seed=config.seed,
        outcome=outcome,
        exit_reason=result.exit_reason.value,
        time_to_violation_s=first.elapsed_s if first is not None else None,
        points_to_violation=first.seq if first is not None else None,
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
        replay_command=recorded.replay_command if recorded else None,
        rerun_command=recorded.rerun_command if recorded else None,
        artifact_problems=list(recorded.problems) if recorded else [],
        host=socket.gethostname(),
        runner=os.environ.get("PYTEST_XDIST_WORKER", "local"),
    )
    data: dict[str, object] = msgspec.to_builtins(record)
    if extra:
        data.update(extra)
    return data
