"""The GPU assignments tracker: the cleanup's races as hand-written interleavings, then stress.

Each interleaving runs the roles' own operations in one process, preempting
one worker at one point (tests.helpers.InjectAt); the racy variants must be
flagged by ``assignment-found`` and the fixed one must not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shmstress.core.workers import WorkerInfo, Workers
from shmstress.testing.sequential import SequentialRun
from shmstress.trackers.gpu_assignments.invariants import AssignmentFound, NoStaleAssignment
from shmstress.trackers.gpu_assignments.names import NO_ID
from shmstress.trackers.gpu_assignments.pod_store import PodPhase
from shmstress.trackers.gpu_assignments.tracker import GpuAssignmentsTracker
from shmstress.trackers.gpu_assignments.variants import CORRECT, MUTANTS, RACY
from shmstress.trackers.gpu_assignments.words import GpuWords
from tests.helpers import InjectAt
from tests.tracker_stress import (
    assert_caught_every_trial,
    assert_clean_under_pct,
    assert_controlled_failure_replays,
    assert_silent_over_long_run,
)

KUBELET, CLEANUP, CONTROLLER = 0, 1, 2
SLOT, CARD = 1, 1
ASSIGNMENT_FOUND, NO_STALE = 0, 1


def _build(variant: str) -> SequentialRun:
    return SequentialRun.build(GpuAssignmentsTracker, variant, params={"pods": 2}, seed=0)


def _violations(run: SequentialRun, invariant: int) -> list[tuple[int, ...]]:
    return [r.fields for r in run.control.violation_records() if r.invariant == invariant]


def _pass_start(run: SequentialRun) -> int:
    """Sequence number of the cleanup pass's first point (a sequential run's trace index)."""
    return run.trace.index((CLEANUP, "Running cleanup"))


def _create_pod(run: SequentialRun) -> None:
    run.runtime.become(CONTROLLER)
    run.tracker.pods.visit(SLOT, churn=True, hold=1)


def _get_preferred_allocation(run: SequentialRun) -> tuple[int, int]:
    run.runtime.become(KUBELET)
    slot, generation = run.tracker.pods.next_candidate(KUBELET)
    run.tracker.manager.get_preferred_allocation(slot, generation, CARD)
    return slot, generation


def _allocate(run: SequentialRun, slot: int, generation: int) -> None:
    run.runtime.become(KUBELET)
    run.tracker.manager.allocate(slot, generation, CARD)


def _pod_arrives_while_cleanup_waits_for_the_mutex(variant: str) -> SequentialRun:
    """Cleanup stops just before taking the mutex; a pod is created and gets its assignment."""
    run = _build(variant)
    arrived: list[tuple[int, int]] = []
    inject = InjectAt(run.runtime, CLEANUP, "Cleanup takes the mutex",
                      lambda: (_create_pod(run), arrived.append(_get_preferred_allocation(run))))
    run.set_gate(inject)
    run.runtime.become(CLEANUP)
    run.tracker.manager.cleanup_pass()
    assert inject.fired
    _allocate(run, *arrived[0])
    return run


@pytest.mark.parametrize("variant", ["list-before-lock", "running-only"])
def test_listing_before_the_mutex_loses_a_new_pods_assignment(variant: str) -> None:
    run = _pod_arrives_while_cleanup_waits_for_the_mutex(variant)
    try:
        assert _violations(run, ASSIGNMENT_FOUND) == [
            (SLOT, 1, CARD, KUBELET, CLEANUP, _pass_start(run))]
        assert run.tracker.pods.phase.mv[SLOT] == PodPhase.PENDING  # still waiting for Allocate
    finally:
        run.close()


def test_listing_under_the_mutex_keeps_a_new_pods_assignment() -> None:
    run = _pod_arrives_while_cleanup_waits_for_the_mutex("fixed")
    try:
        assert _violations(run, ASSIGNMENT_FOUND) == []
        assert run.tracker.assignments.card.mv[SLOT] == CARD
    finally:
        run.close()


def _cleanup_between_get_preferred_allocation_and_allocate(variant: str) -> SequentialRun:
    """The seed comment's race: a whole cleanup pass runs between the kubelet's two calls."""
    run = _build(variant)
    _create_pod(run)

    def cleanup() -> None:
        run.runtime.become(CLEANUP)
        run.tracker.manager.cleanup_pass()

    inject = InjectAt(run.runtime, KUBELET, "Kubelet calls Allocate", cleanup)
    run.set_gate(inject)
    assert run.step(KUBELET)
    assert inject.fired
    return run


def test_cleanup_keeping_only_running_pods_drops_a_pending_pods_assignment() -> None:
    run = _cleanup_between_get_preferred_allocation_and_allocate("running-only")
    try:
        [fields] = _violations(run, ASSIGNMENT_FOUND)
        assert (fields[0], fields[1], fields[3], fields[4], fields[5]) == (
            SLOT, 1, KUBELET, CLEANUP, _pass_start(run))
    finally:
        run.close()


@pytest.mark.parametrize("variant", ["list-before-lock", "fixed"])
def test_cleanup_keeping_pending_pods_spares_the_assignment(variant: str) -> None:
    run = _cleanup_between_get_preferred_allocation_and_allocate(variant)
    try:
        assert _violations(run, ASSIGNMENT_FOUND) == []
        assert run.tracker.pods.phase.mv[SLOT] == PodPhase.RUNNING
    finally:
        run.close()


def _pod_starts_between_the_cleanups_lists(variant: str) -> SequentialRun:
    """A pod GetPreferredAllocation served is pending; the kubelet starts it running just
    before the cleanup's second list (or its only one)."""
    run = _build(variant)
    _create_pod(run)
    slot, generation = _get_preferred_allocation(run)

    def start_running() -> None:
        run.runtime.become(KUBELET)
        run.tracker.pods.start_running(slot, generation)

    run.set_gate(InjectAt(run.runtime, CLEANUP, "List pods on node", start_running,
                          nth=2 if variant == "list-before-lock" else 1))
    run.runtime.become(CLEANUP)
    run.tracker.manager.cleanup_pass()
    return run


def test_two_lists_can_miss_a_pod_that_starts_in_between() -> None:
    run = _pod_starts_between_the_cleanups_lists("list-before-lock")
    try:
        assert run.tracker.pods.phase.mv[SLOT] == PodPhase.RUNNING
        assert run.tracker.assignments.generation.mv[SLOT] == NO_ID  # a running pod's entry
    finally:
        run.close()


def test_the_fixed_cleanup_lists_running_and_pending_pods_in_one_consistent_list() -> None:
    run = _pod_starts_between_the_cleanups_lists("fixed")
    try:
        lists = [label for worker, label in run.trace if label == "List pods on node"]
        assert len(lists) == 1
        assert run.tracker.pods.phase.mv[SLOT] == PodPhase.RUNNING
        assert run.tracker.assignments.card.mv[SLOT] == CARD
    finally:
        run.close()


def _admit_delete_and_clean_twice(variant: str) -> SequentialRun:
    run = _build(variant)
    _create_pod(run)
    assert run.step(KUBELET)  # GetPreferredAllocation, Allocate, running
    run.runtime.become(CONTROLLER)
    run.tracker.pods.visit(SLOT, churn=True, hold=1)  # deleted: terminating
    assert run.tracker.pods.phase.mv[SLOT] == PodPhase.TERMINATING
    run.runtime.become(CLEANUP)
    run.tracker.manager.cleanup_pass()
    run.tracker.manager.cleanup_pass()
    return run


def test_an_assignment_that_survives_two_cleanups_is_flagged_online_and_at_rest() -> None:
    run = _admit_delete_and_clean_twice("mutant-all-phases")
    try:
        card = int(run.tracker.assignments.card.mv[SLOT])
        assert _violations(run, NO_STALE) == [(SLOT, 1, card, 2, CLEANUP)]
        [at_rest] = run.final_violations()
        assert at_rest.invariant == "no-stale-assignment"
        assert at_rest.fields["pod"] == SLOT and at_rest.fields["cleanup"] == NO_ID
    finally:
        run.close()


def test_the_fixed_cleanup_removes_a_deleted_pods_assignment_at_its_first_pass() -> None:
    run = _admit_delete_and_clean_twice("fixed")
    try:
        assert _violations(run, NO_STALE) == []
        assert run.tracker.assignments.generation.mv[SLOT] == NO_ID
        assert run.final_violations() == []
    finally:
        run.close()


@pytest.mark.parametrize("variant", [*CORRECT, *RACY])
def test_a_sequential_run_is_clean_and_settles(variant: str) -> None:
    """One worker at a time there is no race: every variant but the mutant is clean."""
    with SequentialRun.build(GpuAssignmentsTracker, variant, seed=3) as run:
        assert run.run(3000) == []
        assert run.control.violation_count == 0
        assert not run.tracker.pods.any_pending()


def test_violations_render_as_one_line_naming_pod_card_and_workers() -> None:
    workers = Workers([WorkerInfo(0, "kubelet", 0, 11), WorkerInfo(1, "cleanup", 0, 12)])
    params = {"pods": 4, "cards": 2, "hold-visits": 2}
    found = AssignmentFound().render(
        {"pod": 3, "generation": 7, "card": 1, "kubelet": 0, "remover": 1, "since": 40},
        workers, params)
    assert found == (
        "Allocate by kubelet #1 (pid 11) found no assignment for pending pod "
        "default/gpu-pod-3-7, although GetPreferredAllocation stored card1 for it; "
        "cleanup #1 (pid 12) removed it"
    )
    stale = NoStaleAssignment().render(
        {"pod": 2, "generation": 5, "card": 0, "passes": 2, "cleanup": 1}, workers, params)
    assert "default/gpu-pod-2-5" in stale and "card0" in stale and "cleanup #1" in stale
    assert "\n" not in found + stale


def test_words_name_pods_and_cards_as_the_device_plugin_does() -> None:
    words = GpuWords()
    assert words.logger == "gpu-plugin"
    assert words.event("Selected devices for container",
                       (("pod", 1), ("generation", 2), ("card", 0))) == (
        "Selected devices for container",
        (("pod", "default/gpu-pod-1-2"), ("card", "card0")))
    assert words.step("List pods on node", {"phase": "running,pending"}) == \
        "lists running and pending pods"
    assert words.step("List pods on node", {}) == "lists pods"  # known from the tape only
    params = {"pods": 4, "cards": 2, "hold-visits": 2}
    scope = AssignmentFound().scope({"pod": 1, "generation": 2, "card": 0, "kubelet": 0,
                                     "remover": 1, "since": 40}, params)
    assert (scope.worker, scope.start, scope.subjects) == (1, 40, (("pod", 1),))
    assert scope.names[("pod", 1)] == 'pod "default/gpu-pod-1-2"'
    stale = NoStaleAssignment().scope({"pod": 2, "generation": 5, "card": 0, "passes": 2,
                                       "cleanup": 1}, params)
    assert (stale.worker, stale.start, stale.subjects) == (1, None, (("pod", 2),))
    assert stale.names[("pod", 2)] == 'pod "default/gpu-pod-2-5"'
    at_rest = NoStaleAssignment().scope({"pod": 2, "generation": 5, "card": 0, "passes": 2,
                                         "cleanup": NO_ID}, params)
    assert at_rest.worker is None


RACING_STEPS = {
    "running-only": {"assignment-found": [  # Allocate may be called before or after the
        # removal; its lookup comes after it
        "lists running pods", "stores the pod's assignment", "removes the pod's assignment",
        "finds none"]},
    "list-before-lock": {"assignment-found": [
        "lists running pods", "lists pending pods", "creates the pod",
        "stores the pod's assignment", "takes the cleanup mutex", "removes the pod's assignment",
        "finds none"]},
}


@pytest.mark.stress
@pytest.mark.parametrize("variant", RACY)
def test_racy_variant_is_found_in_controlled_mode_and_replays_with_its_story(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_controlled_failure_replays("gpu-assignments", variant, RACING_STEPS[variant],
                                      tmp_path, capsys)


@pytest.mark.stress
@pytest.mark.parametrize("variant", MUTANTS)
def test_mutant_is_found_in_controlled_mode_and_replays(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = ["deletes the pod", "lists running, pending and terminating pods"]
    assert_controlled_failure_replays("gpu-assignments", variant,
                                      {"no-stale-assignment": steps}, tmp_path, capsys)


@pytest.mark.stress
@pytest.mark.parametrize("variant", CORRECT)
def test_fixed_variant_is_clean_under_pct(variant: str) -> None:
    assert_clean_under_pct("gpu-assignments", variant)


@pytest.mark.stress
@pytest.mark.parametrize("variant", RACY)
def test_racy_variant_is_caught_in_every_trial(variant: str) -> None:
    assert_caught_every_trial("gpu-assignments", variant, ["assignment-found"])


@pytest.mark.stress
@pytest.mark.parametrize("variant", MUTANTS)
def test_mutant_is_caught_in_every_trial(variant: str) -> None:
    assert_caught_every_trial("gpu-assignments", variant, ["no-stale-assignment"])


@pytest.mark.stress
@pytest.mark.parametrize("variant", CORRECT)
def test_fixed_variant_is_silent_over_a_long_run(variant: str) -> None:
    assert_silent_over_long_run("gpu-assignments", variant)
