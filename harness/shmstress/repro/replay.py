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
from dataclasses import dataclass, replace

from shmstress.controlled.channel import G_STEP
from shmstress.controlled.execution import ExecutionEnd, ExecutionOutcome, PhasePlan
from shmstress.controlled.progress import NO_PROGRESS
from shmstress.controlled.runner import end_reason, prepare, session_spec
from shmstress.controlled.session import Session, WorkerLostError
from shmstress.controlled.strategies import Replay
from shmstress.core.exit_reason import ExitCode, ExitReason
from shmstress.core.result import RunResult, Violation
from shmstress.core.shm import sweep_stale_segments
from shmstress.core.signals import interruptible
from shmstress.core.workers import WorkerInfo
from shmstress.repro.bundle import Bundle, ExpectedViolation, require_fit


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


def replay_bundle(bundle: Bundle, record: bool = True, pin: bool = True,
                  stop_timeout: float | None = None) -> ReplayReport:
    """Replay ``bundle`` once; raises ConfigError (BundleError) if it cannot even start.
    ``stop_timeout``: how long a step may take before its worker counts as hung (default:
    the run's --stop-timeout)."""
    config, tracker_cls, workers = prepare(bundle.run_config())
    if stop_timeout is not None:
        config = replace(config, stop_timeout=stop_timeout)
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
        try:
            outcome = session.execute(strategy, bundle.execution_seed, plan, record=record)
        except WorkerLostError as lost:
            if not (lost.hung and bundle.violation.invariant == NO_PROGRESS):
                raise
            outcome = _hung(bundle, session, lost)  # the step it hung in, hung again
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
    violations = sorted(outcome.violations, key=lambda v: not _matches(bundle.violation, v))
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
    """A no-progress failure: the step its probe began at, where the replay probes again
    (a free run's: where its tape ends)."""
    if bundle.violation.invariant != NO_PROGRESS:
        return None
    since = bundle.violation.fields.get("since")
    return None if since is None else min(since, len(bundle.steps))


def _hung(bundle: Bundle, session: Session, lost: WorkerLostError) -> ExecutionOutcome:
    """A no-progress failure whose worker was stuck inside a step (free mode's watchdog):
    the replay reproduces it when that worker hangs in the replay too."""
    steps = int(session.channel.globals.mv[G_STEP])
    worker = session.spec.workers[lost.worker]
    found = Violation(
        invariant=NO_PROGRESS,
        message=f"no progress: {worker.describe()} did not reach its next point within "
                f"{session.spec.stop_timeout:g} s: it is stuck inside a step",
        fields={"worker": lost.worker, "stuck": 1 << lost.worker, "since": steps},
        worker=worker, seq=steps,
        elapsed_s=None)
    return ExecutionOutcome(ExecutionEnd.NO_PROGRESS, bundle.execution_seed,
                            bundle.steps[:steps], 0, bundle.phase_changes, (found,), 1)


def _matches(expected: ExpectedViolation, found: Violation) -> bool:
    """The recorded violation again? No progress is the same when a worker that was stuck
    is stuck again (``stuck``: a mask of workers); where a probe began, or a free run's
    watchdog fired, and which of several stuck workers it saw first differ between a run
    and its replay."""
    if expected.invariant == NO_PROGRESS:
        worker = found.fields.get("worker", -1)
        stuck = expected.fields.get("stuck", 1 << expected.fields.get("worker", 0))
        return found.invariant == NO_PROGRESS and worker >= 0 and bool(stuck >> worker & 1)
    return expected.matches(found)


def _verdict(bundle: Bundle, outcome: ExecutionOutcome) -> tuple[Verdict, str]:
    total = len(bundle.steps)
    if outcome.end is ExecutionEnd.DIVERGED and outcome.divergence is not None:
        return Verdict.DIVERGED, f"diverged at {outcome.divergence} ({total} steps recorded)"
    found = next((v for v in outcome.violations if _matches(bundle.violation, v)), None)
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
