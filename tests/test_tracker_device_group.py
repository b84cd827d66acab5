"""The device group tracker: PreBind's check-then-act as hand-written interleavings, the two
mutations of the seed's code, then stress.

Pods 2p and 2p+1 belong to group p. Binders are workers 1 and 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shmstress.core.config import RunConfig
from shmstress.core.exit_reason import ExitReason
from shmstress.core.workers import WorkerInfo, Workers
from shmstress.free.runner import run as run_for_real
from shmstress.testing.sequential import SequentialRun
from shmstress.trackers.device_group.device_tracker import ReleaseProblem
from shmstress.trackers.device_group.invariants import (
    GroupOnOneNode,
    NoSharedDevice,
    RollbackRestoresFree,
)
from shmstress.trackers.device_group.names import NO_ID, Naming
from shmstress.trackers.device_group.tracker import DeviceGroupTracker
from shmstress.trackers.device_group.variants import CORRECT, MUTANTS, RACY
from shmstress.trackers.device_group.words import DeviceGroupWords
from tests.helpers import InjectAt
from tests.tracker_stress import (
    BUDGET_S,
    assert_caught_at_rest_every_trial,
    assert_caught_every_trial,
    assert_clean_under_pct,
    assert_controlled_failure_replays,
    assert_silent_over_long_run,
)

SCHEDULER, BINDER_1, BINDER_2, KUBELET = 0, 1, 2, 3
NO_SHARED, ONE_NODE, ROLLBACK = 0, 1, 2
NO_ERRORS = {"api-error-percent": 0, "bind-error-percent": 0}
DEVICES = 4


def _build(variant: str, **params: int) -> SequentialRun:
    return SequentialRun.build(DeviceGroupTracker, variant, params=NO_ERRORS | params, seed=0)


def _pre_bind(run: SequentialRun, binder: int, pod: int, node: int) -> bool:
    run.runtime.become(binder)
    return run.tracker.plugin.pre_bind(pod, node, run.runtime.rng)


def _violations(run: SequentialRun, invariant: int) -> list[tuple[int, ...]]:
    return [r.fields for r in run.control.violation_records() if r.invariant == invariant]


def _pre_bind_start(run: SequentialRun, binder: int) -> int:
    """Sequence number of ``binder``'s first PreBind point (a sequential run's trace index)."""
    first = "Claim group devices" if run.tracker.plugin.traits.atomic_prebind else \
        "Check group binding"
    return run.trace.index((binder, first))


def _race_between_select_and_allocate(
    variant: str, other_pod: int, other_node: int
) -> tuple[SequentialRun, InjectAt]:
    """Binder 1 PreBinds pod 0 on node 0; binder 2's PreBind runs where binder 1 would allocate."""
    run = _build(variant)

    def binder_2_pre_binds() -> None:
        assert _pre_bind(run, BINDER_2, other_pod, other_node)

    inject = InjectAt(run.runtime, BINDER_1, "Allocate devices", binder_2_pre_binds)
    run.set_gate(inject)
    assert _pre_bind(run, BINDER_1, 0, 0)
    return run, inject


def test_select_then_allocate_gives_two_groups_the_same_devices() -> None:
    run, inject = _race_between_select_and_allocate("select-then-allocate", 2, 0)
    try:
        assert inject.fired
        since = _pre_bind_start(run, BINDER_1)
        assert _violations(run, NO_SHARED) == [
            (0, 0, 0, 1, BINDER_1, since), (0, 1, 0, 1, BINDER_1, since)]
    finally:
        run.close()


def test_select_then_allocate_binds_one_group_to_two_nodes() -> None:
    run, inject = _race_between_select_and_allocate("select-then-allocate", 1, 1)
    try:
        assert inject.fired
        assert _violations(run, ONE_NODE) == [(0, 0, 1, BINDER_1, _pre_bind_start(run, BINDER_1))]
    finally:
        run.close()


def test_select_then_allocate_gives_one_group_the_same_devices_twice() -> None:
    """Both pods of group 0 find it unbound and select the same devices of node 0: the second
    allocation is caught where it happens, before the group is bound twice, and before any
    release can find the node's free count short of the devices counted out twice."""
    run, inject = _race_between_select_and_allocate("select-then-allocate", 1, 0)
    try:
        assert inject.fired
        since = _pre_bind_start(run, BINDER_1)
        records = run.control.violation_records()
        assert [r.invariant for r in records] == [NO_SHARED, NO_SHARED, ONE_NODE]
        assert _violations(run, NO_SHARED) == [
            (0, 0, 0, 0, BINDER_1, since), (0, 1, 0, 0, BINDER_1, since)]
        assert run.tracker.devices.free.mv[0] == DEVICES - 4  # 2 devices counted out twice
    finally:
        run.close()


def test_atomic_prebind_has_no_point_between_select_and_allocate() -> None:
    run, inject = _race_between_select_and_allocate("atomic", 2, 0)
    try:
        assert not inject.fired  # nowhere for another binder to run in between
        binder_1 = [label for worker, label in run.trace if worker == BINDER_1]
        assert "Claim group devices" in binder_1
        assert "Select devices" not in binder_1 and "Allocate devices" not in binder_1
        assert _pre_bind(run, BINDER_2, 2, 0)
        owners = list(run.tracker.devices.owner.np[:DEVICES])
        assert owners == [0, 0, 1, 1]
        assert run.control.violation_count == 0
    finally:
        run.close()


@pytest.mark.parametrize(("variant", "claim"), [
    ("select-then-allocate", ["Check group binding", "Select devices", "Allocate devices"]),
    ("atomic", ["Claim group devices"])])
def test_pre_bind_stores_the_annotation_before_bind_group_as_the_seed_does(
    variant: str, claim: list[str]
) -> None:
    with _build(variant) as run:
        assert _pre_bind(run, BINDER_1, 0, 0)
        steps = [label for worker, label in run.trace if worker == BINDER_1]
        assert steps == [*claim, "Stored device allocation", "Bind group to node"]


def _second_pod_pre_binds_while_the_first_stores(variant: str) -> SequentialRun:
    """The seed's widest window: pod 1 of group 0 PreBinds (on node 1) while pod 0's PreBind
    is between its claim and BindGroup, storing the annotation."""
    run = _build(variant)
    outcome: list[bool] = []
    run.set_gate(InjectAt(run.runtime, BINDER_1, "Stored device allocation",
                          lambda: outcome.append(_pre_bind(run, BINDER_2, 1, 1))))
    assert _pre_bind(run, BINDER_1, 0, 0)
    assert outcome
    return run


def test_racy_pre_bind_lets_another_pod_bind_the_group_during_the_api_call() -> None:
    with _second_pod_pre_binds_while_the_first_stores("select-then-allocate") as run:
        assert _violations(run, ONE_NODE) == [(0, 0, 1, BINDER_1, _pre_bind_start(run, BINDER_1))]


def test_atomic_claim_holds_the_group_for_its_node_during_the_api_call() -> None:
    with _second_pod_pre_binds_while_the_first_stores("atomic") as run:
        assert run.control.violation_count == 0
        assert run.tracker.devices.group_users.mv[0] == 1  # pod 1 went elsewhere: refused
        assert run.tracker.devices.group_node.mv[0] == 0


def _bind_then(variant: str, undo: str) -> SequentialRun:
    """Pod 0 PreBinds on node 0, then finishes (``finish``) or is rolled back (``unreserve``)."""
    run = _build(variant)
    assert _pre_bind(run, BINDER_1, 0, 0)
    if undo == "finish":
        run.runtime.become(KUBELET)
        run.tracker.plugin.pod_finished(0)
    else:
        run.tracker.plugin.unreserve(0)
    return run


def test_padded_release_list_gives_back_a_device_twice() -> None:
    run = _bind_then("mutant-padded-release", "finish")
    try:
        [first, *_] = _violations(run, ROLLBACK)
        assert first[:5] == (ReleaseProblem.NOT_HELD, 0, 0, 0, NO_ID)
        assert dict(zip(RollbackRestoresFree.fields, first, strict=False))["worker"] == KUBELET
    finally:
        run.close()


def test_unreserve_returning_early_leaks_the_groups_devices() -> None:
    run = _bind_then("mutant-unreserve-returns-early", "unreserve")
    try:
        found = run.final_violations()
        leaked = [f.fields["device"] for f in found if f.fields["kind"] == ReleaseProblem.LEAKED]
        assert leaked == [0, 1]
        assert any(f.fields["kind"] == ReleaseProblem.FREE_COUNT for f in found)
    finally:
        run.close()


@pytest.mark.parametrize("undo", ["finish", "unreserve"])
def test_atomic_release_restores_every_device_and_the_free_count(undo: str) -> None:
    run = _bind_then("atomic", undo)
    try:
        assert run.control.violation_count == 0
        assert run.final_violations() == []
        assert list(run.tracker.devices.free.np) == [DEVICES, DEVICES]
    finally:
        run.close()


@pytest.mark.parametrize("variant", [*RACY, *CORRECT])
def test_failed_annotation_rolls_back_the_allocation(variant: str) -> None:
    with _build(variant, **{"api-error-percent": 100}) as run:
        assert not _pre_bind(run, BINDER_1, 0, 0)
        assert run.control.violation_count == 0
        assert run.final_violations() == []
        assert run.tracker.devices.group_node.mv[0] == NO_ID
        assert list(run.tracker.devices.free.np) == [DEVICES, DEVICES]


@pytest.mark.parametrize("variant", [*RACY, *CORRECT])
def test_a_sequential_run_is_clean_and_settles(variant: str) -> None:
    with SequentialRun.build(DeviceGroupTracker, variant, seed=5) as run:
        assert run.run(3000) == []
        assert run.control.violation_count == 0
        assert run.tracker.drained()


def test_violations_render_as_one_line_naming_devices_groups_and_workers() -> None:
    workers = Workers([WorkerInfo(0, "scheduler", 0, 31), WorkerInfo(1, "binder", 0, 32),
                       WorkerInfo(2, "binder", 1, 33), WorkerInfo(3, "kubelet", 0, 34)])
    params = {"pods-per-group": 2}
    shared = NoSharedDevice().render(
        {"node": 1, "device": 2, "group": 0, "other": 2, "worker": 2, "since": 40}, workers,
        params)
    assert shared == ("device node-1/example.com/gpu/2 was allocated to group-0 by binder #2 "
                      "(pid 33) while group-2 held it")
    twice = NoSharedDevice().render(
        {"node": 0, "device": 1, "group": 1, "other": 1, "worker": 1, "since": 40}, workers,
        params)
    assert twice == ("device node-0/example.com/gpu/1 was allocated to group-1 by binder #1 "
                     "(pid 32) while group-1 already held it")
    bound = GroupOnOneNode().render(
        {"group": 1, "node": 0, "other": 1, "worker": 1, "since": 40}, workers, params)
    assert bound == ("binder #1 (pid 32) bound group-1 to node-0 while another PreBind had "
                     "bound it to node-1")
    released = RollbackRestoresFree().render(
        {"kind": ReleaseProblem.NOT_HELD, "node": 0, "device": 0, "group": 1, "holder": NO_ID,
         "free": NO_ID, "actual": NO_ID, "worker": 3}, workers, params)
    assert released == ("kubelet #1 (pid 34) released device node-0/example.com/gpu/0 for "
                        "group-1, but it was already free")


def test_words_name_devices_groups_and_pods() -> None:
    words = DeviceGroupWords(Naming(2), devices_per_node=4)
    assert words.event("Allocate devices", (("node", 1), ("group", 0), ("devices", 0b0110))) == (
        "Allocate devices", (("node", "node-1"), ("group", "group-0"),
                             ("devices", ["node-1/example.com/gpu/1", "node-1/example.com/gpu/2"])))
    assert words.step("Bind group to node", {"group": 2, "node": 0}) == \
        "binds group-2 to node-0 (BindGroup)"
    assert words.step("Bind group to node", {}) == "binds the group to the node (BindGroup)"
    assert words.subjects("Stored device allocation", {"pod": 3, "devices": 1}) == (
        ("pod", 3), ("group", 1))


def test_a_pod_bound_in_a_run_reads_as_binding_it() -> None:
    # The recorded state is the int the words name: "binds <pod>" in an explanation.
    names = Naming(2)
    words = DeviceGroupWords(names, devices_per_node=DEVICES)
    states: list[dict[str, object]] = []

    def keep_pod_states(seq: int, worker: int, label: str, fields: dict[str, object]) -> None:
        if label == "Pod state":
            states.append(dict(fields))

    with _build("atomic") as run:
        run.runtime.sink = keep_pod_states
        run.run(300)
    running = [fields for fields in states if words.step("Pod state", fields) is not None]
    assert running, "no pod was bound"
    pod = running[0]["pod"]
    assert isinstance(pod, int)
    assert words.step("Pod state", running[0]) == f"binds {names.pod(pod)}"
    assert words.event("Pod state", tuple(running[0].items())) == (
        "Pod state", (("pod", names.pod(pod)), ("state", "running")))


RACING_STEPS = {
    "no-shared-device": ["selects free devices on node-", "(AllocateDevices)",
                         "(AllocateDevices)"],
    "group-on-one-node": ["checks group-", "stores the device annotation", "(BindGroup)",
                          "(BindGroup)"],
}


@pytest.mark.stress
@pytest.mark.parametrize("variant", RACY)
def test_racy_variant_is_found_in_controlled_mode_and_replays_with_its_story(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_controlled_failure_replays("device-group", variant, RACING_STEPS, tmp_path, capsys)


@pytest.mark.stress
@pytest.mark.parametrize("variant", RACY)
def test_racy_variant_with_one_pod_per_group_shares_a_device_in_controlled_mode(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With one pod per group only the race between groups is left: no-shared-device."""
    only = {"no-shared-device": RACING_STEPS["no-shared-device"]}
    assert_controlled_failure_replays("device-group", variant, only, tmp_path, capsys,
                                      params={"pods-per-group": 1})


MUTANT_STEPS = {  # the injected bug's own step, after the allocation it breaks
    "mutant-padded-release": ["releases devices"],  # a release of devices it never held
    "mutant-unreserve-returns-early": ["allocates devices", "returns before cleaning up"],
}


@pytest.mark.stress
@pytest.mark.parametrize("variant", MUTANTS)
def test_mutant_is_found_in_controlled_mode_and_replays(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_controlled_failure_replays(
        "device-group", variant, {"rollback-restores-free": MUTANT_STEPS[variant]}, tmp_path,
        capsys,
    )


@pytest.mark.stress
@pytest.mark.parametrize("variant", CORRECT)
def test_fixed_variant_is_clean_under_pct(variant: str) -> None:
    assert_clean_under_pct("device-group", variant)


@pytest.mark.stress
@pytest.mark.parametrize("variant", RACY)
def test_racy_variant_is_caught_in_every_trial(variant: str) -> None:
    """The first violation is the race itself: two PreBinds allocating one device (of two
    groups, or twice for one group) or binding one group twice. A free count found short at
    a release (rollback-restores-free) is only ever a later symptom of a double allocation
    for one group, which no-shared-device reports at the allocation, so it may not come
    first (see test_select_then_allocate_gives_one_group_the_same_devices_twice)."""
    assert_caught_every_trial("device-group", variant, ["no-shared-device", "group-on-one-node"])


@pytest.mark.stress
@pytest.mark.parametrize("variant", RACY)
def test_racy_variant_shares_a_device_between_groups_of_one_pod(variant: str) -> None:
    """With one pod per group only the race between groups is left: no-shared-device."""
    result = run_for_real(RunConfig(tracker="device-group", variant=variant,
                                    params={"pods-per-group": 1}, duration=BUDGET_S * 2,
                                    seed=7))
    assert result.exit_reason is ExitReason.VIOLATION
    assert "while group-" in result.violations[0].message


@pytest.mark.stress
def test_padded_release_mutant_is_caught_in_every_trial() -> None:
    assert_caught_every_trial("device-group", "mutant-padded-release", ["rollback-restores-free"])


@pytest.mark.stress
def test_unreserve_mutant_is_caught_at_rest_in_every_trial() -> None:
    assert_caught_at_rest_every_trial("device-group", "mutant-unreserve-returns-early",
                                      "rollback-restores-free", points=20_000)


@pytest.mark.stress
@pytest.mark.parametrize("variant", CORRECT)
def test_fixed_variant_is_silent_over_a_long_run(variant: str) -> None:
    assert_silent_over_long_run("device-group", variant)
