"""The claim deallocation tracker: the KEP's race as hand-written interleavings, then stress.

With DeallocationRequested in PodScheduling, a scheduler that read the flag
before it was set still adds its pod to ReservedFor (the claim's
resourceVersion did not change); with the flag in the claim status the
same interleaving ends in a conflict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shmstress.api import NO_ID, Scope, Worker, Workers
from shmstress.core.config import RunConfig
from shmstress.core.exit_reason import ExitReason
from shmstress.free.runner import run as run_for_real
from shmstress.testing.sequential import SequentialRun
from shmstress.trackers.claim_deallocation.claim_client import ClaimView
from shmstress.trackers.claim_deallocation.invariants import (
    NoDeallocateWhileReserved,
    NoReserveWhileDeallocating,
    StatusMatchesDriver,
)
from shmstress.trackers.claim_deallocation.names import Naming
from shmstress.trackers.claim_deallocation.tracker import ClaimDeallocationTracker
from shmstress.trackers.claim_deallocation.variants import CORRECT, RACY
from shmstress.trackers.claim_deallocation.words import ClaimWords
from tests.helpers import InjectAt
from tests.tracker_stress import (
    BUDGET_S,
    assert_caught_every_trial,
    assert_clean_under_pct,
    assert_controlled_failure_replays,
    assert_silent_over_long_run,
)

SCHEDULER, KUBELET, DEALLOCATOR, DRIVER = 0, 1, 2, 3
CLAIM, POD = 0, 1
NO_RESERVE, NO_DEALLOCATE = 0, 1


def _allocated_claim(variant: str) -> SequentialRun:
    run = SequentialRun.build(ClaimDeallocationTracker, variant, seed=0)
    run.runtime.become(DRIVER)
    run.tracker.client.sync(CLAIM)
    assert run.tracker.api.allocated.mv[CLAIM] == 1
    return run


def _violations(run: SequentialRun, invariant: int) -> list[tuple[int, ...]]:
    return [r.fields for r in run.control.violation_records() if r.invariant == invariant]


def _request_deallocation(run: SequentialRun) -> None:
    run.runtime.become(DEALLOCATOR)
    assert run.tracker.client.request_deallocation(CLAIM)


def _flag_read(run: SequentialRun) -> int:
    """Sequence number of the scheduler's read of the flag (a sequential run's trace index)."""
    label = "get claim" if run.tracker.client.flag_in_status else "get podscheduling"
    return run.trace.index((SCHEDULER, label))


def _reserve_with(run: SequentialRun, action: InjectAt) -> bool:
    """The scheduler reads the claim, is preempted where it is about to write, then writes."""
    run.set_gate(action)
    run.runtime.become(SCHEDULER)
    reserved = run.tracker.client.reserve(POD)
    assert action.fired
    return reserved


def test_flag_in_pod_scheduling_lets_a_pod_join_a_claim_being_deallocated() -> None:
    run = _allocated_claim("pod-scheduling-flag")
    try:
        inject = InjectAt(run.runtime, SCHEDULER, "Reserving claim for pod",
                          lambda: _request_deallocation(run))
        assert _reserve_with(run, inject)
        assert _violations(run, NO_RESERVE) == [(CLAIM, POD, SCHEDULER, _flag_read(run))]
        assert run.tracker.api.reserved_for.mv[CLAIM] == 1 << POD
    finally:
        run.close()


def test_flag_in_claim_status_turns_the_same_interleaving_into_a_conflict() -> None:
    run = _allocated_claim("claim-status-flag")
    try:
        inject = InjectAt(run.runtime, SCHEDULER, "Reserving claim for pod",
                          lambda: _request_deallocation(run))
        assert not _reserve_with(run, inject)
        assert _violations(run, NO_RESERVE) == []
        assert run.tracker.api.reserved_for.mv[CLAIM] == 0
    finally:
        run.close()


def _driver_decides_while_scheduler_writes(variant: str) -> SequentialRun:
    """Deallocation is requested and the driver reads the claim unused while the scheduler is
    between its read and its write; the driver frees the hardware after the write."""
    run = _allocated_claim(variant)
    seen: list[ClaimView] = []

    def request_and_driver_reads() -> None:
        _request_deallocation(run)
        run.runtime.become(DRIVER)
        view = run.tracker.client.read(CLAIM)
        assert view.requested and view.status.reserved_for == 0
        seen.append(view)

    _reserve_with(run, InjectAt(run.runtime, SCHEDULER, "Reserving claim for pod",
                                request_and_driver_reads))
    run.runtime.become(DRIVER)
    run.tracker.client.deallocate(CLAIM, seen[0])
    return run


def test_driver_frees_a_claim_the_racing_scheduler_just_reserved() -> None:
    run = _driver_decides_while_scheduler_writes("pod-scheduling-flag")
    try:
        driver_read = run.trace.index((DRIVER, "get podscheduling"), _flag_read(run) + 1)
        assert _violations(run, NO_DEALLOCATE) == [(CLAIM, POD, 1, DRIVER, driver_read)]
        assert run.tracker.backend.allocated.mv[CLAIM] == 0
    finally:
        run.close()


def test_driver_frees_the_claim_only_while_it_has_no_users() -> None:
    run = _driver_decides_while_scheduler_writes("claim-status-flag")
    try:
        assert run.control.violation_count == 0
        assert run.tracker.api.reserved_for.mv[CLAIM] == 0
        assert run.tracker.api.allocated.mv[CLAIM] == 0
        assert run.final_violations() == []
    finally:
        run.close()


@pytest.mark.parametrize("variant", [*RACY, *CORRECT])
def test_a_sequential_run_is_clean_and_settles(variant: str) -> None:
    with SequentialRun.build(ClaimDeallocationTracker, variant, seed=4) as run:
        assert run.run(3000) == []
        assert run.control.violation_count == 0
        assert run.tracker.drained()


def test_at_rest_check_names_a_claim_whose_status_and_driver_disagree() -> None:
    with SequentialRun.build(ClaimDeallocationTracker, "claim-status-flag", seed=4) as run:
        assert run.run(500) == []
        run.tracker.backend.allocated.np[1] = 1 - run.tracker.api.allocated.np[1]
        [found] = run.final_violations()
        assert found.fields["claim"] == 1
        message = StatusMatchesDriver().render(found.fields, Workers(), {"pods-per-claim": 2})
        assert message.startswith("claim default/claim-1 status says allocated=")


def test_violations_render_as_one_line_naming_claim_pod_and_worker() -> None:
    workers = Workers([Worker(0, "scheduler", 0, 21), Worker(1, "kubelet", 0, 22),
                       Worker(2, "deallocator", 0, 23), Worker(3, "driver", 0, 24)])
    params = {"claims": 2, "pods-per-claim": 2, "hold-steps": 3}
    reserve = NoReserveWhileDeallocating().render(
        {"claim": 1, "pod": 3, "worker": 0, "since": 40}, workers, params)
    assert reserve == ("scheduler #1 (pid 21) added pod default/pod-1-1 to ReservedFor of "
                       "claim default/claim-1 while its deallocation was requested")
    freed = NoDeallocateWhileReserved().render(
        {"claim": 0, "pod": 1, "users": 1, "worker": 3, "since": 40}, workers, params)
    assert freed == ("claim default/claim-0 was deallocated by driver #1 (pid 24) while "
                     "ReservedFor still held pod default/pod-0-1 (1 user)")


def test_violations_are_about_their_claim_pod_and_worker_from_the_read_on() -> None:
    params = {"claims": 2, "pods-per-claim": 2, "hold-steps": 3}
    race = {"claim": 1, "pod": 3, "worker": 0, "since": 40}
    for invariant in (NoReserveWhileDeallocating(), NoDeallocateWhileReserved()):
        assert invariant.scope({**race, "users": 1}, params) == Scope(
            subjects=(("claim", 1), ("pod", 3)), worker=0, start=40)
    unknown_start = NoReserveWhileDeallocating().scope({**race, "since": NO_ID}, params)
    assert unknown_start.start is None
    at_rest = StatusMatchesDriver().scope({"kind": 0, "claim": 1, "status": 1, "driver": 0},
                                          params)
    assert at_rest == Scope(subjects=(("claim", 1),))


def test_log_words_record_the_flag_where_the_variant_keeps_it() -> None:
    words = ClaimWords(Naming(2))
    assert words.event("update claim status", (("claim", 1), ("reservedFor", 0b1100))) == (
        "update claim status",
        (("claim", "default/claim-1"), ("reservedFor", ["default/pod-1-0", "default/pod-1-1"])))
    in_scheduling = words.effects("update podscheduling", {"claim": 1, "requested": True})
    assert [(e.subject, e.fact, e.holds) for e in in_scheduling] == [
        (("claim", 1), "deallocation requested", True)]
    # Without the field (the flag lives in PodScheduling) a status update says nothing of it.
    status = words.effects("update claim status", {"claim": 1, "reservedFor": 4,
                                                   "allocated": True})
    assert [(e.fact, e.holds) for e in status] == [("allocated", True)]
    assert words.step("update claim status", {"claim": 1, "reservedFor": 4,
                                              "allocated": True}) == \
        "writes ReservedFor [default/pod-1-0] into the claim status"


RACING_STEPS = {
    "no-reserve-while-deallocating": [
        "scheduler #1", "reads PodScheduling", "deallocator #1",
        "sets DeallocationRequested in PodScheduling", "scheduler #1", "writes ReservedFor"],
}


@pytest.mark.stress
@pytest.mark.parametrize("variant", RACY)
def test_racy_variant_is_found_in_controlled_mode_and_replays_with_its_story(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_controlled_failure_replays("claim-deallocation", variant, RACING_STEPS, tmp_path,
                                      capsys)


@pytest.mark.stress
@pytest.mark.parametrize("variant", CORRECT)
def test_fixed_variant_is_clean_under_pct(variant: str) -> None:
    assert_clean_under_pct("claim-deallocation", variant)


@pytest.mark.stress
@pytest.mark.parametrize("variant", RACY)
def test_racy_variant_is_caught_in_every_trial(variant: str) -> None:
    assert_caught_every_trial("claim-deallocation", variant,
                              ["no-reserve-while-deallocating", "no-deallocate-while-reserved"])


@pytest.mark.stress
@pytest.mark.parametrize("variant", RACY)
def test_racy_variant_frees_a_reserved_claim_when_only_the_symptom_is_checked(
    variant: str,
) -> None:
    result = run_for_real(RunConfig(tracker="claim-deallocation", variant=variant,
                                    duration=BUDGET_S * 2, seed=7,
                                    checks=("no-deallocate-while-reserved",)))
    assert result.exit_reason is ExitReason.VIOLATION
    assert "while ReservedFor still held pod" in result.violations[0].message


@pytest.mark.stress
@pytest.mark.parametrize("variant", CORRECT)
def test_fixed_variant_is_silent_over_a_long_run(variant: str) -> None:
    assert_silent_over_long_run("claim-deallocation", variant)
