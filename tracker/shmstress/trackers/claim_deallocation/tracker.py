"""The claim deallocation tracker: one flag, kept in the claim status or in PodScheduling."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from shmstress.core.errors import ConfigError
from shmstress.core.shm import Arena
from shmstress.plugin.protocol import BaseTracker, Invariant, Parameter, Role, TrackerRuntime
from shmstress.plugin.words import LogWords
from shmstress.trackers.claim_deallocation.api_server import ApiServer
from shmstress.trackers.claim_deallocation.claim_client import ClaimClient
from shmstress.trackers.claim_deallocation.driver_backend import DriverBackend
from shmstress.trackers.claim_deallocation.invariants import INVARIANTS
from shmstress.trackers.claim_deallocation.log_words import ClaimLogWords
from shmstress.trackers.claim_deallocation.names import Naming
from shmstress.trackers.claim_deallocation.roles.deallocator import Deallocator
from shmstress.trackers.claim_deallocation.roles.driver import Driver
from shmstress.trackers.claim_deallocation.roles.kubelet import Kubelet
from shmstress.trackers.claim_deallocation.roles.scheduler import Scheduler
from shmstress.trackers.claim_deallocation.variants import VARIANTS

_MAX_PODS = 62  # ReservedFor is a bitmask in one int64


class ClaimDeallocationTracker(BaseTracker):
    """Shared ResourceClaims: pods reserve them while deallocation is requested and carried out."""

    name: ClassVar[str] = "claim-deallocation"
    summary: ClassVar[str] = (
        "DRA KEP: a claim shared by pods; DeallocationRequested set while a scheduler adds a "
        "pod to ReservedFor, with the flag in the claim status or in PodScheduling"
    )
    variants: ClassVar[Mapping[str, str]] = {name: text for name, (_, text) in VARIANTS.items()}
    roles: ClassVar[Mapping[str, str]] = {
        "scheduler": "adds a waiting pod to ReservedFor of its allocated claim, then binds it",
        "kubelet": "running pods finish after a hold and leave ReservedFor",
        "deallocator": "the scheduler's recovery: requests deallocation of an allocated claim",
        "driver": "frees requested claims nobody uses, then clears the status; allocates free "
        "claims",
    }
    role_types: ClassVar[Mapping[str, Callable[[Any, int], Role]]] = {
        "scheduler": Scheduler, "kubelet": Kubelet, "deallocator": Deallocator, "driver": Driver,
    }
    default_counts: ClassVar[Mapping[str, int]] = {
        "scheduler": 1, "kubelet": 1, "deallocator": 1, "driver": 1,
    }
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "claims": Parameter(2, "shared ResourceClaims", minimum=1, maximum=_MAX_PODS),
        "pods-per-claim": Parameter(2, "pods sharing each claim", minimum=1,
                                    maximum=_MAX_PODS),
        "hold-steps": Parameter(3, "kubelet steps a running pod keeps its claim reserved"),
    }
    invariants: ClassVar[tuple[Invariant, ...]] = INVARIANTS

    def __init__(
        self, runtime: TrackerRuntime, arena: Arena, variant: str, params: Mapping[str, int]
    ) -> None:
        self.runtime = runtime
        self.claims = params["claims"]
        self.pods = params["claims"] * params["pods-per-claim"]
        if self.pods > _MAX_PODS:
            raise ConfigError(
                f"--param claims x pods-per-claim must be <= {_MAX_PODS}, got {self.pods}"
            )
        self.hold_steps = params["hold-steps"]
        self.naming = Naming(params["pods-per-claim"])
        self.api = ApiServer(runtime, arena, runtime.lock("api server"), self.claims, self.pods)
        self.backend = DriverBackend(
            runtime, arena, runtime.lock("driver backend"), self.api, self.claims
        )
        self.client = ClaimClient(runtime, self.api, self.backend, self.naming,
                                  flag_in_status=VARIANTS[variant][0])

    @classmethod
    def log_words(cls, params: Mapping[str, int]) -> LogWords:
        """Claim and pod names, and the KEP actors' API calls, for logs and explanations."""
        return ClaimLogWords(Naming(params["pods-per-claim"]))

    def drained(self) -> bool:
        return self.api.settled()
