"""Each DRA structure alone, sequentially, in a one-process tracker."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from shmstress.core.errors import UnknownVariantError
from shmstress.record.recorder import MAX_SEQUENCE_ITEMS, Recorder
from shmstress.testing.sequential import SequentialRun
from shmstress.trackers.common import ApiConflict
from shmstress.trackers.dra.api_server import RELIST, WatchEvent
from shmstress.trackers.dra.assume_cache import AssumeOutOfSync
from shmstress.trackers.dra.names import NO_ID, Naming
from shmstress.trackers.dra.tracker import DraTracker

BINDER, INFORMER, GATHERER = 0, 2, 3  # worker ids with the default counts (2, 1, 1)


@pytest.fixture
def fixed() -> Iterator[SequentialRun]:
    with SequentialRun.build(DraTracker, "fixed", seed=1) as run:
        run.runtime.become(BINDER)
        yield run


def violations(run: SequentialRun) -> list[str]:
    names = [inv.name for inv in DraTracker.invariants]
    return [names[r.invariant] for r in run.control.violation_records()]


def test_api_update_needs_the_current_resource_version(fixed: SequentialRun) -> None:
    api = fixed.tracker.api
    device, rv = api.get(0)
    assert device == NO_ID
    new_rv = api.update_status(0, rv, 5)
    assert new_rv > rv
    assert api.get(0) == (5, new_rv)
    with pytest.raises(ApiConflict):
        api.update_status(0, rv, NO_ID)
    assert api.update_status(0, new_rv, NO_ID) > new_rv


def test_api_event_log_is_watched_in_order_and_relists_when_overrun(
    fixed: SequentialRun,
) -> None:
    api = fixed.tracker.api
    assert api.watch(0) is None
    rv = api.update_status(3, api.get(3)[1], 2)
    assert api.watch(0) == WatchEvent(3, 2, rv)
    assert api.watch(1) is None
    for _ in range(api.log_capacity):
        api.update_status(3, api.get(3)[1], NO_ID)
    assert api.watch(0) is RELIST
    items, position = api.list_claims()
    assert position == api.events_appended
    assert len(items) == fixed.tracker.claims_count


def test_api_flags_a_second_claim_on_one_device(fixed: SequentialRun) -> None:
    api = fixed.tracker.api
    api.update_status(0, api.get(0)[1], 5)
    assert violations(fixed) == []
    api.update_status(1, api.get(1)[1], 5)
    assert violations(fixed) == ["no-double-allocation"]
    record = fixed.control.violation_records()[0]
    assert record.fields[:3] == (5, 0, 1)


def test_assume_cache_keeps_only_newer_informer_objects(fixed: SequentialRun) -> None:
    cache = fixed.tracker.cache
    _, rv = cache.get(0)
    assert cache.update(0, 4, rv + 10)
    assert not cache.update(0, NO_ID, rv + 5)  # stale resync: ignored
    assert cache.get(0) == (4, rv + 10)
    assert not cache.update(0, NO_ID, rv + 10)  # same version: ignored


def test_assume_then_restore_and_out_of_sync(fixed: SequentialRun) -> None:
    cache = fixed.tracker.cache
    allocated = fixed.tracker.allocated
    _, rv = cache.get(1)
    cache.assume(1, 6, rv + 1)
    assert cache.get(1) == (6, rv + 1)
    assert allocated.claim_of.mv[6] == 1  # delivered before assume returned
    cache.restore(1)
    assert cache.get(1) == (NO_ID, rv)
    assert allocated.claim_of.mv[6] == NO_ID
    cache.update(1, 2, rv + 5)
    with pytest.raises(AssumeOutOfSync):
        cache.assume(1, 3, rv + 4)


def test_allocated_devices_revision_counts_mutations(fixed: SequentialRun) -> None:
    allocated = fixed.tracker.allocated
    r0 = allocated.revision()
    allocated.handle_event(0, NO_ID, 3)
    allocated.handle_event(0, 3, 3)  # no change: no new revision
    allocated.handle_event(0, 3, NO_ID)
    assert allocated.revision() == r0 + 2
    seen, revision = allocated.get()
    assert revision == r0 + 2
    assert not any(seen)


def test_in_flight_store_remove_and_range(fixed: SequentialRun) -> None:
    in_flight = fixed.tracker.in_flight
    in_flight.store(2, 7)
    in_flight.store(4, 1)
    assert in_flight.has(2)
    assert sorted(in_flight.devices()) == [1, 7]
    assert in_flight.remove(2)
    assert not in_flight.remove(2)
    assert in_flight.devices() == [1]


def test_gather_sees_cache_and_in_flight(fixed: SequentialRun) -> None:
    tracker = fixed.tracker
    tracker.cache.assume(0, 2, tracker.cache.get(0)[1] + 1)
    tracker.in_flight.store(1, 5)
    fixed.runtime.become(GATHERER)
    seen = tracker.claims.gather_allocated_state()
    assert np.flatnonzero(seen).tolist() == [2, 5]
    assert violations(fixed) == []


def test_a_gather_of_more_devices_than_a_record_holds_records_their_count() -> None:
    params = {"nodes": 4, "devices-per-node": 1024}
    with SequentialRun.build(DraTracker, "fixed", params=params, record=False) as run:
        tracker = run.tracker
        assert tracker.devices > MAX_SEQUENCE_ITEMS
        recorder = Recorder(run.arena, len(run.workers), ring_size=4096, tape_size=256)
        try:
            run.runtime.sink = recorder.record
            run.runtime.log_sink = recorder.log
            run.runtime.become(GATHERER)
            claim_of = tracker.allocated.claim_of.np
            claim_of[:MAX_SEQUENCE_ITEMS] = np.arange(MAX_SEQUENCE_ITEMS)  # as many as fit
            tracker.claims.gather_allocated_state()
            claim_of[:] = np.arange(tracker.devices)  # every device: more than fit
            tracker.claims.gather_allocated_state()
            recording = recorder.collect(run.control.points)
        finally:
            recorder.release()
    finished = [dict(record.fields) for record in recording.records
                if recording.labels[record.label].text == "Finished GatherAllocatedState"]
    assert finished == [{"allocatedDevices": tuple(range(MAX_SEQUENCE_ITEMS))},
                        {"allocatedDeviceCount": 4096}]


def test_a_misspelt_variant_is_refused_before_anything_is_built() -> None:
    with pytest.raises(UnknownVariantError, match="no variant 'fixd'"):
        SequentialRun.build(DraTracker, "fixd")


def test_names_follow_upstream_spelling() -> None:
    names = Naming(nodes=8, devices_per_node=100)
    assert names.device(594) == "driver.example.com/worker-5/worker-5-device-094"
    assert names.claim(553) == "shmstress/claim-0553"
    assert names.node(594) == "worker-5"


@pytest.mark.parametrize("variant", ["fixed", "single-lock", "gather-unchecked"])
def test_sequential_run_settles_with_every_claim_allocated_once(variant: str) -> None:
    with SequentialRun.build(DraTracker, variant, seed=4) as run:
        found = run.run(4000)
        assert found == []
        assert run.control.violation_count == 0
        api_devices = run.tracker.api.device.np
        assert sorted(api_devices.tolist()) == list(range(run.tracker.devices))


def test_same_seed_gives_the_same_trace_and_another_seed_another() -> None:
    def trace(seed: int) -> list[tuple[int, str]]:
        with SequentialRun.build(DraTracker, "fixed", seed=seed) as run:
            run.run(1500)
            return run.trace

    first = trace(11)
    assert first == trace(11)
    assert first != trace(12)
    assert len(first) > 1500
