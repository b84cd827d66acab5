"""What the scheduler, the kubelet and the driver do with a claim, per variant.

The only difference between the variants is where DeallocationRequested is
read and written. In the claim status, the resourceVersion of the claim
covers the flag and ReservedFor together: a scheduler that read the claim
before the flag was set gets a conflict when it tries to add its pod. In
PodScheduling, setting the flag does not change the claim's
resourceVersion, so that scheduler's update goes through.
"""

from __future__ import annotations

from harness.runtime import Runtime
from tracker.claim_deallocation.api_server import ApiConflict, ApiServer, ClaimStatus
from tracker.claim_deallocation.driver_backend import DriverBackend
from tracker.claim_deallocation.names import Naming


class ClaimClient:
    def __init__(
        self, runtime: Runtime, api: ApiServer, backend: DriverBackend, naming: Naming,
        flag_in_status: bool,
    ) -> None:
        self._runtime = runtime
        self.api = api
        self.backend = backend
        self.naming = naming
        self.flag_in_status = flag_in_status

    def read(self, claim: int) -> tuple[ClaimStatus, bool, int]:
        """The claim, whether its deallocation is requested, and the PodScheduling rv."""
        if self.flag_in_status:
            status = self.api.get_claim(claim)
            return status, status.deallocation_requested, 0
        requested, scheduling_rv = self.api.get_pod_scheduling(claim)
        return self.api.get_claim(claim), requested, scheduling_rv

    # -- scheduler --------------------------------------------------------------------------
    def reserve(self, pod: int) -> bool:
        """Add ``pod`` to ReservedFor of its claim if the claim is allocated and not going away."""
        claim = self.naming.claim_of(pod)
        status, requested, _ = self.read(claim)
        if not status.allocated or requested:
            return False
        self._runtime.point("Reserving claim for pod", claim=claim, pod=pod)
        try:
            self.api.update_claim_status(
                claim, status.resource_version, True, status.reserved_for | 1 << pod,
                status.deallocation_requested,
            )
        except ApiConflict:
            return False
        return True

    # -- kubelet ----------------------------------------------------------------------------
    def unreserve(self, pod: int) -> None:
        """Remove a finished pod from ReservedFor, retrying on conflict."""
        claim = self.naming.claim_of(pod)
        while True:
            status = self.api.get_claim(claim)
            try:
                self.api.update_claim_status(
                    claim, status.resource_version, status.allocated,
                    status.reserved_for & ~(1 << pod), status.deallocation_requested,
                )
                return
            except ApiConflict:
                continue

    # -- the scheduler's recovery: "deallocate this and try again" -------------------------
    def request_deallocation(self, claim: int) -> bool:
        status, requested, scheduling_rv = self.read(claim)
        if not status.allocated or requested:
            return False
        try:
            if self.flag_in_status:
                self.api.update_claim_status(
                    claim, status.resource_version, True, status.reserved_for, True
                )
            else:
                self.api.update_pod_scheduling(claim, scheduling_rv, True)
        except ApiConflict:
            return False
        return True

    # -- driver -----------------------------------------------------------------------------
    def sync(self, claim: int) -> None:
        """Deallocate a requested claim nobody uses; allocate a free claim nobody gives up."""
        status, requested, _ = self.read(claim)
        if status.allocated and requested and status.reserved_for == 0:
            self.deallocate(claim, status)
        elif not status.allocated and not requested:
            self.backend.allocate(claim)
            self._write_allocated(claim, status)

    def deallocate(self, claim: int, status: ClaimStatus) -> None:
        """Free the hardware of a claim read as requested and unused, then clear the status."""
        self._runtime.point("Deallocation requested and claim unused", claim=claim)
        self.backend.deallocate(claim)
        self._clear_status(claim, status)
        if not self.flag_in_status:
            self._clear_pod_scheduling(claim)

    def _clear_status(self, claim: int, status: ClaimStatus) -> None:
        """The hardware is gone: the status must say so, whatever changed meanwhile."""
        while True:
            try:
                self.api.update_claim_status(
                    claim, status.resource_version, False, status.reserved_for, False
                )
                return
            except ApiConflict:
                status = self.api.get_claim(claim)

    def _clear_pod_scheduling(self, claim: int) -> None:
        while True:
            _, scheduling_rv = self.api.get_pod_scheduling(claim)
            try:
                self.api.update_pod_scheduling(claim, scheduling_rv, False)
                return
            except ApiConflict:
                continue

    def _write_allocated(self, claim: int, status: ClaimStatus) -> None:
        while True:
            try:
                self.api.update_claim_status(
                    claim, status.resource_version, True, status.reserved_for,
                    status.deallocation_requested,
                )
                return
            except ApiConflict:
                status = self.api.get_claim(claim)
