"""The GPU assignments tracker: the Intel GPU plugin's assignments and cleanup, per variant."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Invariant, Parameter, RoleSpec, Setup, Tracker, Words
from shmstress.trackers.gpu_assignments.assignments import Assignments
from shmstress.trackers.gpu_assignments.invariants import INVARIANTS
from shmstress.trackers.gpu_assignments.pod_store import PodStore
from shmstress.trackers.gpu_assignments.resource_manager import ResourceManager
from shmstress.trackers.gpu_assignments.roles.cleanup import Cleanup
from shmstress.trackers.gpu_assignments.roles.controller import Controller
from shmstress.trackers.gpu_assignments.roles.kubelet import Kubelet
from shmstress.trackers.gpu_assignments.variants import VARIANTS
from shmstress.trackers.gpu_assignments.words import GpuWords


class GpuAssignmentsTracker(Tracker):
    """Intel GPU device plugin: per-pod assignments written, read, and pruned by a cleanup."""

    name: ClassVar[str] = "gpu-assignments"
    summary: ClassVar[str] = (
        "Intel GPU device plugin resource manager: GetPreferredAllocation stores a pod's "
        "assignment, Allocate reads it, a periodic cleanup prunes pods it does not list"
    )
    variants: ClassVar[Mapping[str, str]] = {name: text for name, (_, text) in VARIANTS.items()}
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "kubelet": RoleSpec(
            Kubelet, "admits the oldest pending pod: GetPreferredAllocation, then Allocate",
            stops_after=("controller",)),
        "cleanup": RoleSpec(
            Cleanup, "the periodic cleanup: list pods on the node, prune other assignments",
            stops_after=("kubelet", "controller")),
        "controller": RoleSpec(
            Controller, "creates pods, deletes running ones, removes them after two cleanups"),
    }
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "pods": Parameter(4, "pod slots on the node (each reused by new incarnations)",
                          minimum=1, maximum=4096),
        "cards": Parameter(2, "GPU cards to choose from", minimum=1),
        "hold-visits": Parameter(2, "controller visits a running pod lives before deletion",
                                 minimum=1),
    }
    invariants: ClassVar[tuple[Invariant, ...]] = INVARIANTS

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        runtime = setup.runtime
        self.runtime = runtime
        self.pod_slots = params["pods"]
        self.cards = params["cards"]
        self.hold_visits = params["hold-visits"]
        self.pods = PodStore(runtime, setup, setup.lock("api server pods"), self.pod_slots)
        mutex = setup.lock("cleanup mutex")
        self.assignments = Assignments(setup, mutex, self.pod_slots)
        self.manager = ResourceManager(
            runtime, self.pods, self.assignments, mutex, VARIANTS[variant][0]
        )

    @classmethod
    def words(cls, params: Mapping[str, int]) -> Words:
        """The device plugin's messages and pod names for logs and explanations."""
        return GpuWords()

    def drained(self) -> bool:
        return not self.pods.any_pending()
