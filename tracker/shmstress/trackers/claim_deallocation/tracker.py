"""The claim deallocation tracker: one flag, kept in the claim status or in PodScheduling."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Invariant, Parameter, RoleSpec, Setup, Tracker, Words
from shmstress.trackers.claim_deallocation.api_server import ApiServer
from shmstress.trackers.claim_deallocation.claim_client import ClaimClient
from shmstress.trackers.claim_deallocation.driver_backend import DriverBackend
from shmstress.trackers.claim_deallocation.invariants import INVARIANTS
from shmstress.trackers.claim_deallocation.names import Naming
from shmstress.trackers.claim_deallocation.roles.deallocator import Deallocator
from shmstress.trackers.claim_deallocation.roles.driver import Driver
from shmstress.trackers.claim_deallocation.roles.kubelet import Kubelet
from shmstress.trackers.claim_deallocation.roles.scheduler import Scheduler
from shmstress.trackers.claim_deallocation.variants import VARIANTS
from shmstress.trackers.claim_deallocation.words import ClaimWords

_MAX_PODS = 62  # ReservedFor is a bitmask in one int64


class ClaimDeallocationTracker(Tracker):
    """Shared ResourceClaims: pods reserve them while deallocation is requested and carried out."""

    name: ClassVar[str] = "claim-deallocation"
    summary: ClassVar[str] = (
        "DRA KEP: a claim shared by pods; DeallocationRequested set while a scheduler adds a "
        "pod to ReservedFor, with the flag in the claim status or in PodScheduling"
    )
    variants: ClassVar[Mapping[str, str]] = {name: text for name, (_, text) in VARIANTS.items()}
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "scheduler": RoleSpec(
            Scheduler, "adds a waiting pod to ReservedFor of its allocated claim, then binds it"),
        "kubelet": RoleSpec(
            Kubelet, "running pods finish after a hold and leave ReservedFor",
            stops_after=("scheduler",)),
        "deallocator": RoleSpec(
            Deallocator,
            "the scheduler's recovery: requests deallocation of an allocated claim"),
        "driver": RoleSpec(
            Driver, "frees requested claims nobody uses, then clears the status; allocates free "
            "claims", stops_after=("scheduler", "kubelet", "deallocator")),
    }
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "claims": Parameter(2, "shared ResourceClaims", minimum=1, maximum=_MAX_PODS),
        "pods-per-claim": Parameter(2, "pods sharing each claim", minimum=1,
                                    maximum=_MAX_PODS),
        "hold-steps": Parameter(3, "kubelet steps a running pod keeps its claim reserved"),
    }
    invariants: ClassVar[tuple[Invariant, ...]] = INVARIANTS

    @classmethod
    def param_problems(cls, params: Mapping[str, int]) -> list[str]:
        pods = params["claims"] * params["pods-per-claim"]
        if pods > _MAX_PODS:
            return [f"--param claims x pods-per-claim must be <= {_MAX_PODS}, got {pods}"]
        return []

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        runtime = setup.runtime
        self.runtime = runtime
        self.claims = params["claims"]
        self.pods = params["claims"] * params["pods-per-claim"]
        self.hold_steps = params["hold-steps"]
        self.drivers = setup.workers("driver")
        self.naming = Naming(params["pods-per-claim"])
        self.api = ApiServer(runtime, setup, setup.lock("api server"), self.claims, self.pods)
        self.backend = DriverBackend(
            runtime, setup, setup.lock("driver backend"), self.api, self.claims
        )
        self.client = ClaimClient(runtime, self.api, self.backend, self.naming,
                                  flag_in_status=VARIANTS[variant][0])

    @classmethod
    def words(cls, params: Mapping[str, int]) -> Words:
        """Claim and pod names, and the KEP actors' API calls, for logs and explanations."""
        return ClaimWords(Naming(params["pods-per-claim"]))

    def drained(self) -> bool:
        return self.api.settled()
