"""The GPU assignments tracker: the Intel GPU plugin's assignments and cleanup, per variant."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from shmstress.core.shm import Arena
from shmstress.plugin.protocol import BaseTracker, Invariant, Parameter, Role, TrackerRuntime
from shmstress.plugin.words import LogWords
from shmstress.trackers.gpu_assignments.assignments import Assignments
from shmstress.trackers.gpu_assignments.invariants import INVARIANTS
from shmstress.trackers.gpu_assignments.log_words import GpuLogWords
from shmstress.trackers.gpu_assignments.pod_store import PodStore
from shmstress.trackers.gpu_assignments.resource_manager import ResourceManager
from shmstress.trackers.gpu_assignments.roles.cleanup import Cleanup
from shmstress.trackers.gpu_assignments.roles.controller import Controller
from shmstress.trackers.gpu_assignments.roles.kubelet import Kubelet
from shmstress.trackers.gpu_assignments.variants import VARIANTS


class GpuAssignmentsTracker(BaseTracker):
    """Intel GPU device plugin: per-pod assignments written, read, and pruned by a cleanup."""

    name: ClassVar[str] = "gpu-assignments"
    summary: ClassVar[str] = (
        "Intel GPU device plugin resource manager: GetPreferredAllocation stores a pod's "
        "assignment, Allocate reads it, a periodic cleanup prunes pods it does not list"
    )
    variants: ClassVar[Mapping[str, str]] = {name: text for name, (_, text) in VARIANTS.items()}
    roles: ClassVar[Mapping[str, str]] = {
        "kubelet": "admits the oldest pending pod: GetPreferredAllocation, then Allocate",
        "cleanup": "the periodic cleanup: list pods on the node, prune other assignments",
        "controller": "creates pods, deletes running ones, removes them after two cleanups",
    }
    role_types: ClassVar[Mapping[str, Callable[[Any, int], Role]]] = {
        "kubelet": Kubelet, "cleanup": Cleanup, "controller": Controller,
    }
    default_counts: ClassVar[Mapping[str, int]] = {"kubelet": 1, "cleanup": 1, "controller": 1}
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "pods": Parameter(4, "pod slots on the node (each reused by new incarnations)",
                          minimum=1, maximum=4096),
        "cards": Parameter(2, "GPU cards to choose from", minimum=1),
        "hold-visits": Parameter(2, "controller visits a running pod lives before deletion",
                                 minimum=1),
    }
    invariants: ClassVar[tuple[Invariant, ...]] = INVARIANTS

    def __init__(
        self, runtime: TrackerRuntime, arena: Arena, variant: str, params: Mapping[str, int]
    ) -> None:
        self.runtime = runtime
        self.pod_slots = params["pods"]
        self.cards = params["cards"]
        self.hold_visits = params["hold-visits"]
        self.pods = PodStore(runtime, arena, runtime.lock("api server pods"), self.pod_slots)
        mutex = runtime.lock("cleanup mutex")
        self.assignments = Assignments(arena, mutex, self.pod_slots)
        self.manager = ResourceManager(
            runtime, self.pods, self.assignments, mutex, VARIANTS[variant][0]
        )

    @classmethod
    def log_words(cls, params: Mapping[str, int]) -> LogWords:
        """The device plugin's messages and pod names for logs and explanations."""
        return GpuLogWords()

    def drained(self) -> bool:
        return not self.pods.any_pending()
