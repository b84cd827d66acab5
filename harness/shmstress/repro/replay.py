"""Replaying a repro bundle in controlled mode, step by checked step.

The verdict is one of: reproduced (the same invariant with the same fields
broke), diverged (some step was not where the recording says: step number,
expected and actual), not reproduced (every recorded step was taken and the
violation did not occur), a different violation (what differs is named), or
crashed (a worker raised). Only the first means the bundle stands for the
failure; the CLI exits 1 for it, 4 for a crash and 3 otherwise.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping
from dataclasses import dataclass

from shmstress.controlled.execution import ExecutionEnd, ExecutionOutcome, PhasePlan
from shmstress.controlled.progress import NO_PROGRESS
from shmstress.controlled.runner import end_reason, prepare, session_spec
from shmstress.controlled.session import Session
from shmstress.controlled.strategies import Replay
from shmstress.core.exit_reason import ExitCode, ExitReason
from shmstress.core.result import RunResult
from shmstress.core.shm import sweep_stale_segments
from shmstress.core.signals import interruptible
from shmstress.core.workers import WorkerInfo
from shmstress.repro.bundle import Bundle, require_fit


class Verdict(enum.Enum):
    REPRODUCED = "reproduced"
    DIVERGED = "diverged"
    NOT_REPRODUCED = "not reproduced"
    DIFFERENT_VIOLATION = "different violation"
    CRASHED = "crashed"  # a plain replay's process hung: the run broke (a tracker's raise
    # is a violation like any other, see core/crash.py)


@dataclass(frozen=True)
class ReplayReport:
    verdict: Verdict
    detail: str  # one line: what was reproduced, or where and how the replay diverged
    bundle: Bundle
    outcome: ExecutionOutcome
    result: RunResult  # the replayed execution, recorded (for its log and explanation)
    deviations: tuple[tuple[int, int], ...]  # (step, worker) where the schedule preempts

    @property
    def exit_code(self) -> ExitCode:
        if self.verdict is Verdict.REPRODUCED:
            return ExitCode.FAILURE
        return ExitCode.NOT_REPRODUCED


def replay_bundle(bundle: Bundle, record: bool = True, pin: bool = True) -> ReplayReport:
    """Replay ``bundle`` once; raises ConfigError (BundleError) if it cannot even start."""
    config, tracker_cls, workers = prepare(bundle.run_config())
    require_fit(bundle, config)
    spec = session_spec(
        config, tracker_cls, workers, max_steps=len(bundle.steps) + 1,
        noise_draws=bundle.noise if bundle.replays_noise_draws else None, pin=pin,
    )
    strategy = Replay(bundle.steps, bundle.execution_seed)
    strategy.new_execution()
    plan = PhasePlan(len(bundle.steps) + 1, forced=bundle.phase_changes,
                     step_limit=_probed_from(bundle), rest_at_end=bundle.violation.at_rest)
    sweep_stale_segments()
    t0 = time.monotonic()
    with interruptible(), Session(spec) as session:
        outcome = session.execute(strategy, bundle.execution_seed, plan, record=record)
        recording = session.recording(len(outcome.steps)) if record else None
        pids = session.pids
    verdict, detail = _verdict(bundle, outcome)
    reason = {
        Verdict.REPRODUCED: end_reason(outcome.end),
        Verdict.DIFFERENT_VIOLATION: ExitReason.DIVERGED,
        Verdict.DIVERGED: ExitReason.DIVERGED,
        Verdict.NOT_REPRODUCED: ExitReason.DIVERGED,
    }[verdict]
    # The reproduced violation first: the log snippet and explanation are about it. (A free
    # run's ghost state is read while others run, so a replay may flag one more device.)
    violations = sorted(outcome.violations, key=lambda v: not bundle.violation.matches(v))
    result = RunResult(
        config=config,
        exit_reason=reason,
        violations=tuple(violations),
        violation_count=outcome.violation_count,
        elapsed_s=time.monotonic() - t0,
        points=len(outcome.steps),
        workers=tuple(WorkerInfo(w.worker_id, w.role, w.index, pid)
                      for w, pid in zip(workers, pids, strict=True)),
        crashes=outcome.crashes,
        recording=recording,
        phase_changes=outcome.phase_changes,
    )
    return ReplayReport(verdict, detail, bundle, outcome, result, tuple(strategy.deviations))


def _probed_from(bundle: Bundle) -> int | None:
    """A no-progress failure: the step its probe began at, where the replay probes again."""
    if bundle.violation.invariant != NO_PROGRESS:
        return None
    return bundle.violation.fields.get("since")


def _verdict(bundle: Bundle, outcome: ExecutionOutcome) -> tuple[Verdict, str]:
    total = len(bundle.steps)
    if outcome.end is ExecutionEnd.DIVERGED and outcome.divergence is not None:
        return Verdict.DIVERGED, f"diverged at {outcome.divergence} ({total} steps recorded)"
    found = next((v for v in outcome.violations if bundle.violation.matches(v)), None)
    if found is not None:
        return Verdict.REPRODUCED, f"{found.invariant}: {found.message}"
    found = outcome.principal_violation
    if found is None:
        return Verdict.NOT_REPRODUCED, (
            f"took {len(outcome.steps)} of {total} recorded steps ({outcome.end.value}); "
            f"{bundle.violation.invariant} did not occur"
        )
    return Verdict.DIFFERENT_VIOLATION, (
        f"a different violation after {len(outcome.steps)} of {total} steps: "
        f"{render_mismatch(bundle.violation.mismatch(found))}; found {found.invariant}: "
        f"{found.message}"
    )


def render_mismatch(differs: Mapping[str, tuple[object, object]]) -> str:
    """``invariant gather-complete (recorded no-double-allocation), device 3 (recorded 5)``."""
    return ", ".join(f"{name} {_value(found)} (recorded {_value(recorded)})"
                     for name, (recorded, found) in differs.items())


def _value(value: object) -> str:
    return "missing" if value is None else str(value)
