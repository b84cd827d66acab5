"""The seed's race, driven by hand in one process and recorded as a real run would be.

A deterministic RunResult with a recording, for golden tests of the log
snippet and the explanation: gatherer #1 copies allocated devices, binder #1
assumes the claim and removes it from in-flight, gatherer #1 checks in-flight.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from harness.config import RunConfig
from harness.exit_reason import ExitReason
from harness.recording import Recorder
from harness.result import RunResult, Violation
from harness.sequential import SequentialRun
from tests.helpers import InjectAt
from tracker.dra.tracker import DraTracker

BINDER, BINDER_2, INFORMER, GATHERER = 0, 1, 2, 3
CLAIM, DEVICE, OTHER_CLAIM = 3, 5, 6
PARAMS = {name: p.default for name, p in DraTracker.parameters.items()}


def _bind(run: SequentialRun) -> None:
    run.runtime.become(BINDER)
    tracker = run.tracker
    rv = tracker.api.update_status(CLAIM, tracker.api.get(CLAIM)[1], DEVICE)
    tracker.claims.assume_claim_after_api_call(CLAIM, DEVICE, rv)
    tracker.claims.remove_claim_pending_allocation(CLAIM)


def _unrelated_informer_update(run: SequentialRun) -> None:
    run.runtime.become(INFORMER)
    run.tracker.claims.informer_update(OTHER_CLAIM, 0, 1000)


@contextmanager
def recorded_seed_race(
    variant: str = "gather-unchecked", ring_size: int = 4096, noise_points: int = 0
) -> Iterator[RunResult]:
    """The seed interleaving; ``noise_points`` unrelated binder #2 points come first."""
    run = SequentialRun.build(DraTracker, variant, params=PARAMS, seed=0, record=False)
    try:
        recorder = Recorder(run.arena, len(run.workers), ring_size, tape_size=4096)
        run.runtime.sink = recorder.record
        run.runtime.log_sink = recorder.log
        run.runtime.become(BINDER_2)
        for _ in range(noise_points):
            run.runtime.point("take pod to bind")
        run.runtime.become(GATHERER)
        run.tracker.claims.signal_claim_pending_allocation(CLAIM, DEVICE)
        run.tracker.claims.signal_claim_pending_allocation(OTHER_CLAIM + 1, 0)

        def preempted() -> None:
            _unrelated_informer_update(run)
            _bind(run)

        run.set_gate(InjectAt(run.runtime, GATHERER, "check in-flight claims", preempted))
        run.runtime.become(GATHERER)
        run.tracker.claims.gather_allocated_state()
        recording = recorder.collect(run.control.points)
        recorder.release()
        yield RunResult(
            config=RunConfig(tracker="dra", variant=variant, params=PARAMS, seed=0),
            exit_reason=ExitReason.VIOLATION,
            violations=tuple(_violations(run)),
            violation_count=len(run.control.violation_records()),
            elapsed_s=0.0,
            points=run.control.points,
            workers=tuple(run.workers),
            recording=recording,
        )
    finally:
        run.close()


def _violations(run: SequentialRun) -> list[Violation]:
    invariants = DraTracker.invariants
    found = []
    for record in run.control.violation_records():
        invariant = invariants[record.invariant]
        fields = dict(zip(invariant.fields, record.fields, strict=False))
        found.append(Violation(
            invariant=invariant.name,
            message=invariant.render(fields, run.workers, PARAMS),
            fields=fields,
            worker=run.workers[record.worker],
            seq=record.seq,
            elapsed_s=0.0,
        ))
    return found
