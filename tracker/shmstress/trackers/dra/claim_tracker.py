"""The claim tracker: the operations the scheduler plugin calls (upstream ``dra_manager.go``).

``gather_allocated_state`` is where the seed's race lives: it reads allocated
devices and in-flight claims under different locks. The checked variant
compares the revision afterwards and retries; the unchecked one trusts its
two reads. Online, every gather is compared with the coverage ghost state:
a device allocated for the whole gather must be in its result.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from shmstress.api import LIMITS, Lock, Runtime
from shmstress.trackers.dra.allocated_devices import AllocatedDevices
from shmstress.trackers.dra.assume_cache import AssumeCache
from shmstress.trackers.dra.coverage import Coverage
from shmstress.trackers.dra.in_flight import InFlightClaims


class ConcurrentModification(Exception):  # noqa: N818 - upstream's name
    """The allocated devices changed during a gather; the caller retries."""


class ClaimTracker:
    def __init__(
        self,
        runtime: Runtime,
        cache: AssumeCache,
        in_flight: InFlightClaims,
        allocated: AllocatedDevices,
        coverage: Coverage,
        checked_gather: bool,
        single_lock: Lock | None,
    ) -> None:
        self._runtime = runtime
        self.cache = cache
        self.in_flight = in_flight
        self.allocated = allocated
        self._coverage = coverage
        self._checked = checked_gather
        self._single_lock = single_lock
        self._last_revision = -1
        cache.add_event_handler(allocated.handle_event)

    def _atomically(self, label: str) -> AbstractContextManager[object]:
        """Under the single-lock variant, an operation's steps run under the one lock.

        ``label`` names the operation, not one of its steps: the structures'
        own acquires inside it are nested, and each is still logged with its
        upstream message and fields at its own call site.
        """
        if self._single_lock is None:
            return nullcontext()
        return self._single_lock.held(label)

    def gather_allocated_state(self) -> list[bool]:
        """Bool per device: allocated per the informers or in flight. Retries on conflict."""
        while True:
            try:
                return self._gather_once()
            except ConcurrentModification:
                self._runtime.point("conflicting concurrent modification, retrying")

    def _gather_once(self) -> list[bool]:
        runtime = self._runtime
        with self._atomically("lock claim tracker for GatherAllocatedState"):
            start = runtime.point("Starting GatherAllocatedState")
            allocated, revision = self.allocated.get()
            if revision < self._last_revision:
                runtime.violation(
                    "revision-monotonic", kind=0, previous=self._last_revision, current=revision
                )
            self._last_revision = revision
            for device in self.in_flight.devices():
                allocated[device] = True
            if self._checked and self.allocated.revision() != revision:
                raise ConcurrentModification
            held = [device for device, taken in enumerate(allocated) if taken]
            shown = ({"allocatedDevices": held} if len(held) <= LIMITS.sequence_items
                     else {"allocatedDeviceCount": len(held)})  # too many for one record
            runtime.point("Finished GatherAllocatedState", **shown)
        for device, claim in self._coverage.missed(allocated, start):
            runtime.violation(
                "gather-complete",
                device=device,
                claim=claim,
                gatherer=runtime.worker_id,
                start=start,
            )
        return allocated

    def signal_claim_pending_allocation(self, claim: int, device: int) -> None:
        with self._atomically("lock claim tracker for SignalClaimPendingAllocation"):
            self.in_flight.store(claim, device)

    def remove_claim_pending_allocation(self, claim: int) -> bool:
        with self._atomically("lock claim tracker for RemoveClaimPendingAllocation"):
            return self.in_flight.remove(claim)

    def assume_claim_after_api_call(self, claim: int, device: int, rv: int) -> None:
        with self._atomically("lock claim tracker for AssumeClaimAfterAPICall"):
            self.cache.assume(claim, device, rv)

    def informer_update(self, claim: int, device: int, rv: int) -> bool:
        with self._atomically("lock claim tracker for informer update"):
            return self.cache.update(claim, device, rv)

    def assumed_claim_restore(self, claim: int) -> None:
        with self._atomically("lock claim tracker for AssumedClaimRestore"):
            self.cache.restore(claim)
