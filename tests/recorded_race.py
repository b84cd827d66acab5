"""The two upstream races, driven by hand in one process and recorded as a real run would be.

Deterministic RunResults with a recording, for golden tests of the log
snippet and the explanation:

- the seed's race (``recorded_seed_race``): gatherer #1 copies allocated
  devices, binder #1 assumes the claim and removes it from in-flight,
  gatherer #1 checks in-flight;
- the unordered-events race (``recorded_unordered_race``): informer #1 pops
  binder #1's event and is preempted before delivering it; binder #1 finds
  the queue empty, returns from assume and removes the claim from in-flight;
  gatherer #1 gathers; only then does informer #1 deliver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from shmstress.api import Workers
from shmstress.core.config import RunConfig
from shmstress.core.exit_reason import ExitReason
from shmstress.core.result import RunResult, Violation
from shmstress.record.recorder import Recorder
from shmstress.testing.sequential import SequentialRun
from shmstress.trackers.dra.tracker import DraTracker
from tests.helpers import InjectAt

BINDER, BINDER_2, INFORMER, GATHERER = 0, 1, 2, 3
CLAIM, DEVICE, OTHER_CLAIM = 3, 5, 6
PARAMS = {name: p.default for name, p in DraTracker.parameters.items()}


def bind(run: SequentialRun) -> None:
    """The binder's PreBind as the binder role does it: update, assume, drop in-flight, bind."""
    run.runtime.become(BINDER)
    tracker = run.tracker
    rv = tracker.api.update_status(CLAIM, tracker.api.get(CLAIM)[1], DEVICE)
    tracker.claims.assume_claim_after_api_call(CLAIM, DEVICE, rv)
    tracker.claims.remove_claim_pending_allocation(CLAIM)
    run.runtime.point("Attempting to bind pod to node", pod=CLAIM, device=DEVICE)


def _unrelated_informer_update(run: SequentialRun) -> None:
    run.runtime.become(INFORMER)
    run.tracker.claims.informer_update(OTHER_CLAIM, 0, 1000)


@contextmanager
def recorded_seed_race(
    variant: str = "gather-unchecked", ring_size: int = 4096, noise_points: int = 0
) -> Iterator[RunResult]:
    """The seed interleaving; ``noise_points`` unrelated binder #2 points come first."""

    def race(run: SequentialRun) -> None:
        run.runtime.become(BINDER_2)
        for _ in range(noise_points):
            run.runtime.point("take pod to bind")
        seed_race(run)

    with recorded_interleaving(variant, ring_size, race) as result:
        yield result


def seed_race(run: SequentialRun) -> None:
    """The seed interleaving itself: the gatherer puts the claim in flight and gathers; the
    binder binds it between the gatherer's copy and its check of in-flight claims."""
    run.runtime.become(GATHERER)
    run.tracker.claims.signal_claim_pending_allocation(CLAIM, DEVICE)
    run.tracker.claims.signal_claim_pending_allocation(OTHER_CLAIM + 1, 0)

    def preempted() -> None:
        _unrelated_informer_update(run)
        bind(run)

    run.set_gate(InjectAt(run.runtime, GATHERER, "check in-flight claims", preempted))
    run.runtime.become(GATHERER)
    run.tracker.claims.gather_allocated_state()


@contextmanager
def recorded_unordered_race(variant: str = "events-unordered") -> Iterator[RunResult]:
    """Informer #1 holds binder #1's popped event across a whole gather."""

    def race(run: SequentialRun) -> None:
        tracker = run.tracker
        run.runtime.become(GATHERER)
        tracker.claims.signal_claim_pending_allocation(CLAIM, DEVICE)
        run.runtime.become(BINDER)
        rv = tracker.api.update_status(CLAIM, tracker.api.get(CLAIM)[1], DEVICE)

        def informer_pops_the_event() -> None:
            run.runtime.become(INFORMER)
            tracker.cache.emit_events()

        def binder_returns_and_gatherer_gathers() -> None:
            run.runtime.become(BINDER)
            tracker.claims.remove_claim_pending_allocation(CLAIM)
            run.runtime.become(GATHERER)
            tracker.claims.gather_allocated_state()

        outer = InjectAt(run.runtime, BINDER, "pop event", informer_pops_the_event)
        outer.inner = InjectAt(run.runtime, INFORMER, "Observed device allocation",
                               binder_returns_and_gatherer_gathers)
        run.set_gate(outer)
        run.runtime.become(BINDER)
        tracker.claims.assume_claim_after_api_call(CLAIM, DEVICE, rv)
        assert outer.fired and outer.inner.fired

    with recorded_interleaving(variant, 4096, race) as result:
        yield result


@contextmanager
def recorded_interleaving(
    variant: str, ring_size: int, race: Callable[[SequentialRun], None]
) -> Iterator[RunResult]:
    """``race`` driven on a fresh DRA tracker of ``variant``, recorded, as a RunResult."""
    run = SequentialRun.build(DraTracker, variant, params=PARAMS, seed=0, record=False)
    try:
        recorder = Recorder(run.arena, len(run.workers), ring_size, tape_size=4096)
        run.runtime.sink = recorder.record
        run.runtime.log_sink = recorder.log
        race(run)
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
            message=invariant.render(fields, Workers(run.workers), PARAMS),
            fields=fields,
            worker=run.workers[record.worker],
            seq=record.seq,
            elapsed_s=0.0,
        ))
    return found
