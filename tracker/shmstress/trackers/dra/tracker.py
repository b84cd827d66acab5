"""The DRA claim tracker: the structures of upstream's scheduler plugin, wired per variant."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Invariant, Parameter, RoleSpec, Scenario, Setup, Tracker, Words
from shmstress.trackers.dra.allocated_devices import AllocatedDevices
from shmstress.trackers.dra.api_server import ApiServer
from shmstress.trackers.dra.assume_cache import AssumeCache
from shmstress.trackers.dra.claim_tracker import ClaimTracker
from shmstress.trackers.dra.coverage import Coverage
from shmstress.trackers.dra.in_flight import InFlightClaims
from shmstress.trackers.dra.invariants import INVARIANTS
from shmstress.trackers.dra.names import Naming
from shmstress.trackers.dra.pod_queue import PodQueue
from shmstress.trackers.dra.roles.binder import Binder
from shmstress.trackers.dra.roles.gatherer import Gatherer
from shmstress.trackers.dra.roles.informer import Informer
from shmstress.trackers.dra.variants import VARIANTS
from shmstress.trackers.dra.words import DraWords


class DraTracker(Tracker):
    """Kubernetes DRA scheduler claim tracker: assume cache, in-flight claims, allocated devices."""

    name: ClassVar[str] = "dra"
    summary: ClassVar[str] = (
        "Kubernetes DRA scheduler claim tracker: assume cache + in-flight claims + "
        "allocated devices with a revision"
    )
    variants: ClassVar[Mapping[str, str]] = {name: text for name, (_, text) in VARIANTS.items()}
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "binder": RoleSpec(
            Binder, "binding cycle: API update with conflict retry, assume, drop in-flight; "
            "releases claims after a hold", count=2, stops_after=("gatherer",), grid=(1, 2)),
        "informer": RoleSpec(
            Informer, "watches the API event log and feeds the assume cache",
            stops_after=("binder",)),
        "gatherer": RoleSpec(
            Gatherer, "scheduling cycle: gather allocated state, reserve a free device"),
    }
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "nodes": Parameter(2, "nodes, each with its own pool of devices", minimum=1, maximum=256),
        "devices-per-node": Parameter(
            4, "devices per node; one claim per device", minimum=1, maximum=1024
        ),
        "hold-steps": Parameter(3, "binder steps a bound claim is held before release"),
        "api-error-percent": Parameter(
            5,
            "chance in percent that a status update fails and takes Unreserve "
            "(at most 99: at 100 no claim is ever bound and the run cannot settle)",
            maximum=99,
        ),
    }
    invariants: ClassVar[tuple[Invariant, ...]] = INVARIANTS
    scenarios: ClassVar[Mapping[str, Scenario]] = {
        "one-device": Scenario(
            "one worker per role and one device: the smallest scenario, for executions/s",
            workers={"binder": 1, "informer": 1, "gatherer": 1},
            params={"nodes": 1, "devices-per-node": 1}),
        "seed-race": Scenario(
            "one worker per role and two devices: the smallest scenario of the seed's race",
            workers={"binder": 1, "informer": 1, "gatherer": 1},
            params={"nodes": 1, "devices-per-node": 2}),
    }

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        traits = VARIANTS[variant][0]
        runtime = setup.runtime
        self.runtime = runtime
        self.variant = variant
        self.naming = Naming(params["nodes"], params["devices-per-node"])
        self.devices = params["nodes"] * params["devices-per-node"]
        self.claims_count = self.devices
        self.hold_steps = params["hold-steps"]
        self.api_error_percent = params["api-error-percent"]

        one = setup.lock("claim tracker") if traits.single_lock else None
        self.scheduling_lock = setup.lock("scheduling cycle")
        self.coverage = Coverage(setup.ghost, self.devices)
        self.api = ApiServer(
            runtime, setup, setup.lock("api server"), self.claims_count, self.devices
        )
        self.cache = AssumeCache(
            runtime,
            setup,
            one or setup.lock("assume cache"),
            (one or setup.lock("assume cache events")) if traits.ordered_events else None,
            self.coverage,
            self.claims_count,
        )
        self.in_flight = InFlightClaims(
            runtime, setup, one or setup.lock("in-flight claims"), self.coverage,
            self.claims_count,
        )
        self.allocated = AllocatedDevices(
            setup, one or setup.lock("allocated devices"), self.devices
        )
        self.claims = ClaimTracker(
            runtime, self.cache, self.in_flight, self.allocated, self.coverage,
            traits.checked_gather, one,
        )
        self.pods = PodQueue(setup, setup.lock("pods"), self.claims_count)

    @classmethod
    def words(cls, params: Mapping[str, int]) -> Words:
        """Upstream's messages and names for logs, and the words of explanations."""
        return DraWords(Naming(params["nodes"], params["devices-per-node"]))

    def drained(self) -> bool:
        return self.pods.all_bound()
