"""The API server: ResourceClaims, PodScheduling objects and pods, each with a resourceVersion.

A claim's status holds whether it is allocated, ReservedFor (a bit per pod)
and, in the variant that keeps it there, DeallocationRequested. The
PodScheduling object of a claim holds the flag in the other variant. An
update carries the resourceVersion its caller read; a stale one is a
conflict. Updates of one object are atomic; nothing makes an update of a
claim atomic with an update of its PodScheduling object.

``no-reserve-while-deallocating`` is checked here, in the one place a pod
enters ReservedFor, against the flag wherever the variant keeps it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from shmstress.api import Lock, Runtime, Setup
from shmstress.trackers.claim_deallocation.names import NO_ID
from shmstress.trackers.common import ApiConflict, age_one


class PodPhase(enum.IntEnum):
    WAITING = 0  # wants its claim
    RUNNING = 1  # in ReservedFor of its claim


@dataclass(frozen=True)
class ClaimStatus:
    allocated: bool
    reserved_for: int  # bit p set: pod p is a user of the claim
    deallocation_requested: bool
    resource_version: int


class ApiServer:
    def __init__(
        self, runtime: Runtime, setup: Setup, lock: Lock, claims: int, pods: int,
    ) -> None:
        self._runtime = runtime
        self.lock = lock
        self.allocated = setup.array("claims.api.allocated", claims)
        self.reserved_for = setup.array("claims.api.reserved_for", claims)
        self.requested = setup.array("claims.api.deallocation_requested", claims)
        self.claim_rv = setup.array("claims.api.claim_rv", claims)
        self.scheduling_requested = setup.array("claims.api.podscheduling.requested", claims)
        self.scheduling_rv = setup.array("claims.api.podscheduling.rv", claims)
        self.pod_phase = setup.array("claims.api.pod_phase", pods, PodPhase.WAITING)
        self.pod_age = setup.array("claims.api.pod_age", pods)
        self.rv_counter = setup.array("claims.api.rv_counter", 1)

    def _next_rv(self) -> int:
        rv = self.rv_counter.mv[0] + 1
        self.rv_counter.mv[0] = rv
        return int(rv)

    # -- ResourceClaim ----------------------------------------------------------------------
    def get_claim(self, claim: int) -> tuple[ClaimStatus, int]:
        """The claim's status, and the sequence number of the read (where it began)."""
        with self.lock.held("get claim", claim=claim) as seq:
            return ClaimStatus(
                bool(self.allocated.mv[claim]), int(self.reserved_for.mv[claim]),
                bool(self.requested.mv[claim]), int(self.claim_rv.mv[claim]),
            ), seq

    def update_claim_status(
        self, claim: int, expected_rv: int, allocated: bool, reserved_for: int,
        deallocation_requested: bool | None, since: int = NO_ID,
    ) -> int:
        """Write the status if ``expected_rv`` is current. ``deallocation_requested`` is None
        where the status has no such field (the flag lives in PodScheduling); ``since`` is
        where the caller's read began, for explanations."""
        flag = {} if deallocation_requested is None else {"requested": deallocation_requested}
        with self.lock.held("update claim status", claim=claim, reservedFor=reserved_for,
                            allocated=allocated, **flag):
            if self.claim_rv.mv[claim] != expected_rv:
                raise ApiConflict
            added = reserved_for & ~self.reserved_for.mv[claim]
            if added and (self.requested.mv[claim] or self.scheduling_requested.mv[claim]):
                self._runtime.violation(
                    "no-reserve-while-deallocating", claim=claim,
                    pod=(added & -added).bit_length() - 1, worker=self._runtime.worker_id,
                    since=since,
                )
            self.allocated.mv[claim] = int(allocated)
            self.reserved_for.mv[claim] = reserved_for
            self.requested.mv[claim] = int(bool(deallocation_requested))
            rv = self._next_rv()
            self.claim_rv.mv[claim] = rv
            return rv

    # -- PodScheduling ----------------------------------------------------------------------
    def get_pod_scheduling(self, claim: int) -> tuple[bool, int, int]:
        """(DeallocationRequested, resourceVersion) of the claim's PodScheduling object, and
        the sequence number of the read (where it began)."""
        with self.lock.held("get podscheduling", claim=claim) as seq:
            return (bool(self.scheduling_requested.mv[claim]), int(self.scheduling_rv.mv[claim]),
                    seq)

    def update_pod_scheduling(self, claim: int, expected_rv: int, requested: bool) -> int:
        with self.lock.held("update podscheduling", claim=claim, requested=requested):
            if self.scheduling_rv.mv[claim] != expected_rv:
                raise ApiConflict
            self.scheduling_requested.mv[claim] = int(requested)
            rv = self._next_rv()
            self.scheduling_rv.mv[claim] = rv
            return rv

    # -- pods -------------------------------------------------------------------------------
    def pod_waiting(self, pod: int) -> bool:
        with self.lock.held("get pod", pod=pod):
            return bool(self.pod_phase.mv[pod] == PodPhase.WAITING)

    def set_pod_phase(self, pod: int, phase: PodPhase) -> None:
        with self.lock.held("update pod", pod=pod, phase=phase.name.lower()):
            self.pod_phase.mv[pod] = phase
            self.pod_age.mv[pod] = 0

    def age_running_pod(self, pick: int, hold: int) -> int:
        """One running pod (chosen by ``pick``) ages a step; returns it once done, or NO_ID."""
        with self.lock.held("pod runs"):
            return age_one(np.flatnonzero(self.pod_phase.np == PodPhase.RUNNING), self.pod_age,
                           pick, hold)

    def any_running(self) -> bool:
        with self.lock.held("any pod running"):
            return self._any_running()

    def any_request(self) -> bool:
        with self.lock.held("any deallocation requested"):
            return self._any_request()

    def settled(self) -> bool:
        """Coordinator-side read, no point: no pod running and no deallocation pending."""
        return not (self._any_running() or self._any_request())

    def _any_running(self) -> bool:
        return bool(np.any(self.pod_phase.np == PodPhase.RUNNING))

    def _any_request(self) -> bool:
        return bool(np.any(self.requested.np) or np.any(self.scheduling_requested.np))
