"""What the scheduler, the kubelet and the driver do with a claim, per variant.

The only difference between the variants is where DeallocationRequested is
read and written. In the claim status, the resourceVersion of the claim
covers the flag and ReservedFor together: a scheduler that read the claim
before the flag was set gets a conflict when it tries to add its pod. In
PodScheduling, setting the flag does not change the claim's
resourceVersion, so that scheduler's update goes through.

The scheduler reads the flag in its scheduling cycle and adds the pod to
ReservedFor in PreBind, in the binding cycle that runs later: a yield marks
the time that passes in between.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from shmstress.api import Runtime
from shmstress.trackers.claim_deallocation.api_server import ApiServer, ClaimStatus
from shmstress.trackers.claim_deallocation.driver_backend import DriverBackend
from shmstress.trackers.claim_deallocation.names import Naming
from shmstress.trackers.common import ApiConflict


@dataclass(frozen=True)
class ClaimView:
    """A claim as one caller read it: its status, its flag wherever it lives, and where the
    read began (``since``: the start of an explanation's window)."""

    status: ClaimStatus
    requested: bool
    scheduling_rv: int
    since: int


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

    def read(self, claim: int) -> ClaimView:
        """The claim and whether its deallocation is requested, read flag first."""
        if self.flag_in_status:
            status, since = self.api.get_claim(claim)
            return ClaimView(status, status.deallocation_requested, 0, since)
        requested, scheduling_rv, since = self.api.get_pod_scheduling(claim)
        status, _ = self.api.get_claim(claim)
        return ClaimView(status, requested, scheduling_rv, since)

    def _flag(self, status: ClaimStatus, requested: bool | None = None) -> bool | None:
        """The status's DeallocationRequested to write: None where the status has none."""
        if not self.flag_in_status:
            return None
        return status.deallocation_requested if requested is None else requested

    # -- scheduler --------------------------------------------------------------------------
    def reserve(self, pod: int) -> bool:
        """Add ``pod`` to ReservedFor of its claim if the claim is allocated and not going away."""
        claim = self.naming.claim_of(pod)
        view = self.read(claim)
        status = view.status
        if not status.allocated or view.requested:
            return False
        os.sched_yield()  # Reserve ends the scheduling cycle; PreBind writes later
        self._runtime.point("Reserving claim for pod", claim=claim, pod=pod)
        try:
            self.api.update_claim_status(
                claim, status.resource_version, True, status.reserved_for | 1 << pod,
                self._flag(status), since=view.since,
            )
        except ApiConflict:
            return False
        return True

    # -- kubelet ----------------------------------------------------------------------------
    def unreserve(self, pod: int) -> None:
        """Remove a finished pod from ReservedFor, retrying on conflict."""
        claim = self.naming.claim_of(pod)
        while True:
            status, _ = self.api.get_claim(claim)
            try:
                self.api.update_claim_status(
                    claim, status.resource_version, status.allocated,
                    status.reserved_for & ~(1 << pod), self._flag(status),
                )
                return
            except ApiConflict:
                continue

    # -- the scheduler's recovery: "deallocate this and try again" -------------------------
    def request_deallocation(self, claim: int) -> bool:
        view = self.read(claim)
        status = view.status
        if not status.allocated or view.requested:
            return False
        try:
            if self.flag_in_status:
                self.api.update_claim_status(
                    claim, status.resource_version, True, status.reserved_for, True
                )
            else:
                self.api.update_pod_scheduling(claim, view.scheduling_rv, True)
        except ApiConflict:
            return False
        return True

    # -- driver -----------------------------------------------------------------------------
    def sync(self, claim: int) -> bool:
        """Deallocate a requested claim nobody uses; allocate a free claim nobody gives up.
        False when there was nothing to do."""
        view = self.read(claim)
        status = view.status
        if status.allocated and view.requested and status.reserved_for == 0:
            self.deallocate(claim, view)
            return True
        if not status.allocated and not view.requested:
            self.backend.allocate(claim)
            self._write_allocated(claim, status)
            return True
        return False

    def deallocate(self, claim: int, view: ClaimView) -> None:
        """Free the hardware of a claim read as requested and unused, then clear the status."""
        self._runtime.point("Deallocation requested and claim unused", claim=claim)
        self.backend.deallocate(claim, view.since)
        self._clear_status(claim, view.status)
        if not self.flag_in_status:
            self._clear_pod_scheduling(claim)

    def _clear_status(self, claim: int, status: ClaimStatus) -> None:
        """The hardware is gone: the status must say so, whatever changed meanwhile."""
        while True:
            try:
                self.api.update_claim_status(
                    claim, status.resource_version, False, status.reserved_for,
                    self._flag(status, requested=False),
                )
                return
            except ApiConflict:
                status, _ = self.api.get_claim(claim)

    def _clear_pod_scheduling(self, claim: int) -> None:
        while True:
            _, scheduling_rv, _ = self.api.get_pod_scheduling(claim)
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
                    self._flag(status),
                )
                return
            except ApiConflict:
                status, _ = self.api.get_claim(claim)
