"""The DRA claim tracker: the structures of upstream's scheduler plugin, wired per variant."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from shmstress.core.runtime import Runtime
from shmstress.core.shm import Arena
from shmstress.plugin.protocol import BaseTracker, Invariant, Parameter, Role
from shmstress.plugin.words import LogWords
from shmstress.trackers.dra.allocated_devices import AllocatedDevices
from shmstress.trackers.dra.api_server import ApiServer
from shmstress.trackers.dra.assume_cache import AssumeCache
from shmstress.trackers.dra.claim_tracker import ClaimTracker
from shmstress.trackers.dra.coverage import Coverage
from shmstress.trackers.dra.in_flight import InFlightClaims
from shmstress.trackers.dra.invariants import INVARIANTS
from shmstress.trackers.dra.log_words import DraLogWords
from shmstress.trackers.dra.names import Naming
from shmstress.trackers.dra.pod_queue import PodQueue
from shmstress.trackers.dra.roles.binder import Binder
from shmstress.trackers.dra.roles.gatherer import Gatherer
from shmstress.trackers.dra.roles.informer import Informer
from shmstress.trackers.dra.variants import VARIANTS


class DraTracker(BaseTracker):
    """Kubernetes DRA scheduler claim tracker: assume cache, in-flight claims, allocated devices."""

    name: ClassVar[str] = "dra"
    summary: ClassVar[str] = (
        "Kubernetes DRA scheduler claim tracker: assume cache + in-flight claims + "
        "allocated devices with a revision"
    )
    variants: ClassVar[Mapping[str, str]] = {name: text for name, (_, text) in VARIANTS.items()}
    roles: ClassVar[Mapping[str, str]] = {
        "binder": "binding cycle: API update with conflict retry, assume, drop in-flight; "
        "releases claims after a hold",
        "informer": "watches the API event log and feeds the assume cache",
        "gatherer": "scheduling cycle: gather allocated state, reserve a free device",
    }
    role_types: ClassVar[Mapping[str, Callable[[Any, int], Role]]] = {
        "binder": Binder, "informer": Informer, "gatherer": Gatherer,
    }
    default_counts: ClassVar[Mapping[str, int]] = {"binder": 2, "informer": 1, "gatherer": 1}
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

    def __init__(
        self, runtime: Runtime, arena: Arena, variant: str, params: Mapping[str, int]
    ) -> None:
        traits = VARIANTS[variant][0]
        self.runtime = runtime
        self.variant = variant
        self.naming = Naming(params["nodes"], params["devices-per-node"])
        self.devices = params["nodes"] * params["devices-per-node"]
        self.claims_count = self.devices
        self.hold_steps = params["hold-steps"]
        self.api_error_percent = params["api-error-percent"]

        one = runtime.lock("claim tracker") if traits.single_lock else None
        self.scheduling_lock = runtime.lock("scheduling cycle")
        self.coverage = Coverage(arena, runtime.control, self.devices)
        self.api = ApiServer(
            runtime, arena, runtime.lock("api server"), self.claims_count, self.devices
        )
        self.cache = AssumeCache(
            runtime,
            arena,
            one or runtime.lock("assume cache"),
            (one or runtime.lock("assume cache events")) if traits.ordered_events else None,
            self.coverage,
            self.claims_count,
        )
        self.in_flight = InFlightClaims(
            runtime, arena, one or runtime.lock("in-flight claims"), self.coverage,
            self.claims_count,
        )
        self.allocated = AllocatedDevices(
            arena, one or runtime.lock("allocated devices"), self.devices
        )
        self.claims = ClaimTracker(
            runtime, self.cache, self.in_flight, self.allocated, self.coverage,
            traits.checked_gather, one,
        )
        self.pods = PodQueue(arena, runtime.lock("pods"), self.claims_count)

    @classmethod
    def log_words(cls, params: Mapping[str, int]) -> LogWords:
        """Upstream's messages and names for logs, and the words of explanations."""
        return DraLogWords(Naming(params["nodes"], params["devices-per-node"]))

    def drained(self) -> bool:
        return self.pods.all_bound()
