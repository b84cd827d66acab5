"""``run_controlled``: explore interleavings with a strategy, execution after execution.

The run stops at the first failing execution (a violation or a deadlock),
re-runs it once under replay with recording on (so its log and explanation
come from the very schedule the bundle stores, and the bundle is known to
replay), and returns the totals of every execution.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace

from shmstress.controlled.coverage import CoverageCount
from shmstress.controlled.execution import ExecutionEnd, ExecutionOutcome, PhasePlan
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.result import ControlledResult, FailingExecution
from shmstress.controlled.session import Session, SessionSpec, WorkerLostError, describe_ends
from shmstress.controlled.strategies import Replay, exploring_strategy
from shmstress.controlled.strategies.base import SEED_MASK, current_spec
from shmstress.core.config import RunConfig
from shmstress.core.exit_reason import ExitReason
from shmstress.core.noise import NoiseConfig
from shmstress.core.result import RunResult, Violation
from shmstress.core.shm import sweep_stale_segments
from shmstress.core.signals import interruptible
from shmstress.core.trace import Recording
from shmstress.core.workers import WorkerInfo, number_workers
from shmstress.plugin import registry
from shmstress.plugin.probe import probe
from shmstress.plugin.resolve import resolve
from shmstress.plugin.tracker import Tracker
from shmstress.plugin.wording import declares_accesses


def prepare(config: RunConfig) -> tuple[RunConfig, type[Tracker], tuple[WorkerInfo, ...]]:
    """Load and check the tracker, resolve the config, and number the workers."""
    tracker_cls = registry.load(config.tracker)
    config = resolve(config, tracker_cls, tape=False)
    assert config.variant is not None
    probe(tracker_cls, config.variant, config.params, config.counts,
          strict=True, origin=f"tracker {config.tracker}")
    return config, tracker_cls, number_workers(tracker_cls.roles, config.counts)


def session_spec(
    config: RunConfig,
    tracker_cls: type[Tracker],
    workers: tuple[WorkerInfo, ...],
    max_steps: int,
    noise_draws: NoiseConfig | None = None,
    pin: bool = True,
) -> SessionSpec:
    assert config.variant is not None
    return SessionSpec(
        tracker_cls=tracker_cls,
        variant=config.variant,
        params=dict(config.params),
        workers=workers,
        checks=config.checks,
        max_steps=max_steps,
        stop_timeout=config.stop_timeout,
        ring_size=config.ring_size,
        noise_draws=noise_draws,
        pin=pin,
    )


def run_controlled(config: RunConfig, options: ControlledOptions) -> ControlledResult:
    """Run up to ``options.executions`` executions; stop at the first failure."""
    options.validate()
    config, tracker_cls, workers = prepare(config)
    assert config.seed is not None
    strategy = exploring_strategy(options.strategy, config.seed, len(workers), options.max_steps,
                                  "declared" if declares_accesses(tracker_cls, config.params)
                                  else "undeclared")
    spec = session_spec(config, tracker_cls, workers, options.max_steps, pin=options.pin)
    plan = PhasePlan(options.run_steps)
    sweep_stale_segments()
    ends: Counter[ExecutionEnd] = Counter()  # counts, not a list: a run may last hours
    failing: FailingExecution | None = None
    exhausted = False
    found_by = strategy.spec
    count = CoverageCount()
    steps = 0
    crashes: tuple[str, ...] = ()
    reason: ExitReason | None = None
    recording: Recording | None = None
    pids: tuple[int, ...] = ()
    pinned_cpu: int | None = None
    t0 = time.monotonic()
    with interruptible():
        try:
            with Session(spec) as session:
                pids, pinned_cpu = session.pids, session.pinned_cpu
                for index in range(options.executions):
                    if not strategy.new_execution():
                        exhausted = True
                        break
                    outcome = session.execute(strategy, strategy.next_u64() & SEED_MASK, plan)
                    ends[outcome.end] += 1
                    count.add(outcome.preemptions, outcome.end is ExecutionEnd.STEP_BOUND,
                              outcome.yields)
                    steps += len(outcome.steps)
                    if outcome.failed:
                        failing = FailingExecution(index, outcome, time.monotonic() - t0, None)
                        found_by = current_spec(strategy)
                        crashes = outcome.crashes  # a role that raised: its traceback
                        break
                if failing is not None and options.record:
                    rerun = _rerun_recorded(session, failing.outcome, options)
                    recording = session.recording(len(rerun.steps))
                    expected = failing.outcome.principal_violation
                    failing = replace(failing, reproduced=expected is not None and (
                        expected.matches(rerun.principal_violation)))
        except KeyboardInterrupt:
            reason = ExitReason.INTERRUPTED
        except WorkerLostError as lost:
            reason = ExitReason.TIMEOUT if lost.hung else ExitReason.WORKER_CRASHED
            crashes = (str(lost),)
    elapsed = time.monotonic() - t0
    if reason is None:
        reason = _reason(ends, failing, crashes, exhausted)
    failed = failing.outcome if failing is not None else None
    violations: tuple[Violation, ...] = ()
    if failing is not None and failed is not None:
        violations = tuple(replace(v, elapsed_s=failing.found_after_s)
                           for v in failed.violations)
    run_result = RunResult(
        config=config,
        exit_reason=reason,
        violations=violations,
        violation_count=failed.violation_count if failed is not None else 0,
        elapsed_s=elapsed,
        points=steps,
        workers=tuple(WorkerInfo(w.worker_id, w.role, w.index, pid)
                      for w, pid in zip(workers, pids or (0,) * len(workers), strict=True)),
        crashes=crashes,
        recording=recording,
        phase_changes=failed.phase_changes if failed is not None else (),
    )
    return ControlledResult(
        run=run_result,
        strategy=found_by,
        options=options,
        executions=ends.total(),
        ends=describe_ends(ends),
        failing=failing,
        exhausted=exhausted,
        pinned_cpu=pinned_cpu,
        coverage=count.result(strategy, exhausted),
    )


def _rerun_recorded(
    session: Session, outcome: ExecutionOutcome, options: ControlledOptions
) -> ExecutionOutcome:
    replay = Replay(outcome.steps, outcome.execution_seed)
    replay.new_execution()
    plan = PhasePlan(options.run_steps, forced=outcome.phase_changes)
    return session.execute(replay, outcome.execution_seed, plan, record=True)


def end_reason(end: ExecutionEnd) -> ExitReason:
    """The exit reason of a failing execution: a deadlock or no progress says so."""
    if end is ExecutionEnd.DEADLOCK:
        return ExitReason.DEADLOCK
    if end is ExecutionEnd.NO_PROGRESS:
        return ExitReason.NO_PROGRESS
    return ExitReason.VIOLATION


def _reason(
    ends: Counter[ExecutionEnd], failing: FailingExecution | None, crashes: tuple[str, ...],
    exhausted: bool,
) -> ExitReason:
    if failing is not None:
        return end_reason(failing.outcome.end)
    if crashes:
        return ExitReason.WORKER_CRASHED
    if ExecutionEnd.STEP_BOUND in ends:
        return ExitReason.STEP_BOUND
    return ExitReason.SEARCH_COMPLETE if exhausted else ExitReason.EXECUTIONS_DONE
