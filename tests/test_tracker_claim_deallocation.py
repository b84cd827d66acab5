"""The claim deallocation tracker: the KEP's race as hand-written interleavings, then stress.

With DeallocationRequested in PodScheduling, a scheduler that read the flag
before it was set still adds its pod to ReservedFor (the claim's
resourceVersion did not change); with the flag in the claim status the
same interleaving ends in a conflict.
"""

from __future__ import annotations

import pytest

from harness.config import RunConfig
from harness.exit_reason import ExitReason
from harness.runner import run as run_for_real
from harness.sequential import SequentialRun
from harness.tracker_api import WorkerInfo
from tests.helpers import InjectAt
from tests.tracker_stress import (
    BUDGET_S,
    assert_caught_every_trial,
    assert_silent_over_long_run,
)
from tracker.claim_deallocation.api_server import ClaimStatus
from tracker.claim_deallocation.invariants import (
    NoDeallocateWhileReserved,
    NoReserveWhileDeallocating,
    StatusMatchesDriver,
)
from tracker.claim_deallocation.tracker import ClaimDeallocationTracker
from tracker.claim_deallocation.variants import CORRECT, RACY

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
        assert _violations(run, NO_RESERVE) == [(CLAIM, POD, SCHEDULER)]
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
    seen: list[ClaimStatus] = []

    def request_and_driver_reads() -> None:
        _request_deallocation(run)
        run.runtime.become(DRIVER)
        status, requested, _ = run.tracker.client.read(CLAIM)
        assert requested and status.reserved_for == 0
        seen.append(status)

    _reserve_with(run, InjectAt(run.runtime, SCHEDULER, "Reserving claim for pod",
                                request_and_driver_reads))
    run.runtime.become(DRIVER)
    run.tracker.client.deallocate(CLAIM, seen[0])
    return run


def test_driver_frees_a_claim_the_racing_scheduler_just_reserved() -> None:
    run = _driver_decides_while_scheduler_writes("pod-scheduling-flag")
    try:
        assert _violations(run, NO_DEALLOCATE) == [(CLAIM, POD, 1, DRIVER)]
        assert run.tracker.backend.allocated.mv[CLAIM] == 0
    finally:
        run.close()


def test_driver_frees_the_claim_only_while_it_has_no_users() -> None:
    run = _driver_decides_while_scheduler_writes("claim-status-flag")
    try:
        assert run.control.violation_count == 0
        assert run.tracker.api.reserved_for.mv[CLAIM] == 0
        assert run.tracker.api.allocated.mv[CLAIM] == 0
        assert run.tracker.final_violations() == []
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
        [found] = run.tracker.final_violations()
        assert found.fields["claim"] == 1
        message = StatusMatchesDriver().render(found.fields, [], {"pods-per-claim": 2})
        assert message.startswith("claim default/claim-1 status says allocated=")


def test_violations_render_as_one_line_naming_claim_pod_and_worker() -> None:
    workers = [WorkerInfo(0, "scheduler", 0, 21), WorkerInfo(1, "kubelet", 0, 22),
               WorkerInfo(2, "deallocator", 0, 23), WorkerInfo(3, "driver", 0, 24)]
    params = {"claims": 2, "pods-per-claim": 2, "hold-steps": 3}
    reserve = NoReserveWhileDeallocating().render(
        {"claim": 1, "pod": 3, "worker": 0}, workers, params)
    assert reserve == ("scheduler #1 (pid 21) added pod default/pod-1-1 to ReservedFor of "
                       "claim default/claim-1 while its deallocation was requested")
    freed = NoDeallocateWhileReserved().render(
        {"claim": 0, "pod": 1, "users": 1, "worker": 3}, workers, params)
    assert freed == ("claim default/claim-0 was deallocated by driver #1 (pid 24) while "
                     "ReservedFor still held pod default/pod-0-1 (1 user)")


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
