"""The DRA invariants that a correct run never trips, made to trip on a broken state.

A sequential run of the fixed variant settles clean; then one structure is
corrupted the way a bug would leave it, and the invariant must name exactly
that disagreement. Without these, a check that always returned nothing would
pass the whole suite.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shmstress.api import Workers
from shmstress.testing.sequential import SequentialRun
from shmstress.trackers.dra.invariants.quiescent_agreement import Disagreement
from shmstress.trackers.dra.invariants.revision_monotonic import (
    KIND_RESOURCE_VERSION,
    KIND_REVISION,
)
from shmstress.trackers.dra.names import NO_ID
from shmstress.trackers.dra.tracker import DraTracker

BINDER, GATHERER = 0, 3  # worker ids with the default counts (2 binders, 1 informer, 1 gatherer)


@pytest.fixture
def settled() -> Iterator[SequentialRun]:
    with SequentialRun.build(DraTracker, "fixed", seed=7) as run:
        assert run.run(3000) == []
        yield run


def tracker_of(run: SequentialRun) -> DraTracker:
    assert isinstance(run.tracker, DraTracker)
    return run.tracker


def disagreements(run: SequentialRun) -> list[tuple[Disagreement, int]]:
    return [
        (Disagreement(v.fields["kind"]), v.fields["claim"])
        for v in run.final_violations()
        if v.invariant == "quiescent-agreement"
    ]


def test_a_settled_run_agrees(settled: SequentialRun) -> None:
    assert disagreements(settled) == []


def test_a_claim_left_in_flight_is_named(settled: SequentialRun) -> None:
    tracker = tracker_of(settled)
    tracker.in_flight.device.mv[3] = int(tracker.api.device.mv[3])
    assert disagreements(settled) == [(Disagreement.IN_FLIGHT, 3)]


def test_a_cache_that_lags_the_api_server_is_named(settled: SequentialRun) -> None:
    tracker = tracker_of(settled)
    tracker.cache.latest_device.mv[5] = NO_ID
    assert (Disagreement.CACHE, 5) in disagreements(settled)


def test_allocated_devices_that_lag_the_api_server_are_named(settled: SequentialRun) -> None:
    tracker = tracker_of(settled)
    device = int(tracker.api.device.mv[2])
    tracker.allocated.claim_of.mv[device] = NO_ID
    found = [v for v in settled.final_violations() if v.invariant == "quiescent-agreement"]
    assert [(Disagreement(v.fields["kind"]), v.fields["device"]) for v in found] == [
        (Disagreement.ALLOCATED, device)
    ]


def test_a_device_held_twice_and_a_claim_without_one_are_named(settled: SequentialRun) -> None:
    tracker = tracker_of(settled)
    api = tracker.api.device.mv
    api[1] = api[0]  # claim 1 now on claim 0's device; claim 1's own device is free
    kinds = {kind for kind, _ in disagreements(settled)}
    assert Disagreement.SHARED_DEVICE in kinds
    [invariant] = [i for i in DraTracker.invariants if i.name == "quiescent-agreement"]
    params = {name: p.default for name, p in DraTracker.parameters.items()}
    rendered = [
        invariant.render(v.fields, Workers(settled.workers), params)
        for v in settled.final_violations() if v.invariant == invariant.name
    ]
    assert any("is held by claims" in line for line in rendered)


def revision_violations(run: SequentialRun) -> list[tuple[int, int, int]]:
    names = [inv.name for inv in DraTracker.invariants]
    return [
        (r.fields[0], r.fields[1], r.fields[2])
        for r in run.control.violation_records()
        if names[r.invariant] == "revision-monotonic"
    ]


def test_an_allocated_devices_revision_that_goes_back_is_flagged_at_the_next_gather(
    settled: SequentialRun,
) -> None:
    tracker = tracker_of(settled)
    settled.runtime.become(GATHERER)
    tracker.claims.gather_allocated_state()
    before = int(tracker.allocated.revision_cell.mv[0])
    assert revision_violations(settled) == []
    tracker.allocated.revision_cell.mv[0] = before - 1
    tracker.claims.gather_allocated_state()
    assert revision_violations(settled) == [(KIND_REVISION, before, before - 1)]


def test_a_resource_version_that_does_not_grow_is_flagged_at_the_update(
    settled: SequentialRun,
) -> None:
    tracker = tracker_of(settled)
    settled.runtime.become(BINDER)
    api = tracker.api
    device, rv = api.get(4)
    api.rv.mv[4] = rv + 1000  # as if the global counter had gone back behind this claim
    api.update_status(4, rv + 1000, device)
    [(kind, previous, current)] = revision_violations(settled)
    assert kind == KIND_RESOURCE_VERSION
    assert previous == rv + 1000
    assert current <= previous
