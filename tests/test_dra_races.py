"""The two upstream root causes, reproduced deterministically as hand-written interleavings.

Each test preempts one worker at one point and runs another worker's steps
there, exactly as in the seed's explanation; the racy variant must be
flagged by ``gather-complete`` and the fixed one must not.
"""

from __future__ import annotations

import numpy as np
import pytest

from shmstress.testing.sequential import SequentialRun
from shmstress.trackers.dra.names import NO_ID
from shmstress.trackers.dra.tracker import DraTracker
from tests.helpers import InjectAt

BINDER, INFORMER, GATHERER = 0, 2, 3
CLAIM, DEVICE = 3, 5


def _put_in_flight(run: SequentialRun) -> None:
    run.runtime.become(GATHERER)
    run.tracker.claims.signal_claim_pending_allocation(CLAIM, DEVICE)


def _bind(run: SequentialRun) -> None:
    """The binder's PreBind: API update, assume (delivers), remove from in-flight."""
    run.runtime.become(BINDER)
    tracker = run.tracker
    rv = tracker.api.update_status(CLAIM, tracker.api.get(CLAIM)[1], DEVICE)
    tracker.claims.assume_claim_after_api_call(CLAIM, DEVICE, rv)
    tracker.claims.remove_claim_pending_allocation(CLAIM)


def _gather_racing_the_seed_interleaving(variant: str) -> tuple[SequentialRun, np.ndarray]:
    run = SequentialRun.build(DraTracker, variant, seed=0)
    _put_in_flight(run)
    # gatherer #1 copies allocated devices; binder assumes and removes from in-flight;
    # gatherer #1 then checks in-flight.
    run.set_gate(InjectAt(run.runtime, GATHERER, "check in-flight claims",
                          lambda: _bind(run)))
    run.runtime.become(GATHERER)
    seen = run.tracker.claims.gather_allocated_state()
    return run, seen


def _gather_complete_violations(run: SequentialRun) -> list[tuple[int, ...]]:
    return [r.fields for r in run.control.violation_records() if r.invariant == 1]


def test_seed_race_is_flagged_without_the_revision_check() -> None:
    run, seen = _gather_racing_the_seed_interleaving("gather-unchecked")
    try:
        assert not seen[DEVICE]
        start = run.trace.index((GATHERER, "Starting GatherAllocatedState"))  # seq == index
        assert _gather_complete_violations(run) == [(DEVICE, CLAIM, GATHERER, start)]
    finally:
        run.close()


@pytest.mark.parametrize("variant", ["fixed", "events-unordered"])
def test_seed_race_is_retried_with_the_revision_check(variant: str) -> None:
    run, seen = _gather_racing_the_seed_interleaving(variant)
    try:
        assert seen[DEVICE]
        assert _gather_complete_violations(run) == []
        assert ("gatherer", "conflicting concurrent modification, retrying") in [
            ("gatherer" if w == GATHERER else "other", label) for w, label in run.trace
        ]
    finally:
        run.close()


def _informer_delivering_while_binder_assumes(
    variant: str, preempt_binder_at: str
) -> tuple[SequentialRun, np.ndarray]:
    """The informer pops the binder's queued event and is preempted before delivering it.

    In the unordered variant the binder then finds the queue empty, returns from
    assume, drops the claim from in-flight, and a gather runs. In the ordered
    variant the informer holds the emit lock while it delivers, so the binder
    cannot get past emit: the gather runs while the claim is still in flight.
    """
    run = SequentialRun.build(DraTracker, variant, seed=0)
    tracker = run.tracker
    _put_in_flight(run)
    rv = tracker.api.update_status(CLAIM, tracker.api.get(CLAIM)[1], DEVICE)
    gathered: list[np.ndarray] = []

    def preempted_informer() -> None:
        if variant == "events-unordered":
            run.runtime.become(BINDER)
            tracker.claims.remove_claim_pending_allocation(CLAIM)
        run.runtime.become(GATHERER)
        gathered.append(tracker.claims.gather_allocated_state())

    def informer_pops_the_event() -> None:
        run.runtime.become(INFORMER)
        tracker.cache.emit_events()

    outer = InjectAt(run.runtime, BINDER, preempt_binder_at, informer_pops_the_event)
    outer.inner = InjectAt(run.runtime, INFORMER, "Observed device allocation",
                           preempted_informer)
    run.set_gate(outer)
    run.runtime.become(BINDER)
    tracker.claims.assume_claim_after_api_call(CLAIM, DEVICE, rv)
    tracker.claims.remove_claim_pending_allocation(CLAIM)
    assert outer.fired and outer.inner.fired
    return run, gathered[0]


def test_unordered_events_let_assume_return_before_delivery() -> None:
    run, seen = _informer_delivering_while_binder_assumes("events-unordered", "pop event")
    try:
        assert not seen[DEVICE]
        assert [f[:2] for f in _gather_complete_violations(run)] == [(DEVICE, CLAIM)]
        assert run.tracker.allocated.claim_of.mv[DEVICE] == CLAIM  # delivered, but too late
    finally:
        run.close()


def test_ordered_events_keep_the_claim_in_flight_until_delivered() -> None:
    run, seen = _informer_delivering_while_binder_assumes("fixed", "deliver queued events")
    try:
        assert seen[DEVICE]
        assert _gather_complete_violations(run) == []
        assert run.tracker.allocated.claim_of.mv[DEVICE] == CLAIM
    finally:
        run.close()


def test_claims_without_devices_are_not_reported() -> None:
    run, _ = _gather_racing_the_seed_interleaving("gather-unchecked")
    try:
        assert run.tracker.in_flight.device.mv[CLAIM] == NO_ID
    finally:
        run.close()
