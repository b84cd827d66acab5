"""The API server: the truth about claims, optimistic concurrency, and a watchable event log.

Updates carry the resourceVersion the caller read; a stale one is a conflict
the caller retries. Every accepted update gets a new, strictly increasing
resourceVersion and is appended to the event log informers watch. The log is
a ring: an informer that falls more than its capacity behind must relist,
as a real informer does after a watch expires.
"""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.api import Lock, Runtime, Setup
from shmstress.trackers.common import ApiConflict
from shmstress.trackers.dra.names import NO_ID

_RV = 0
_EVENTS = 1


@dataclass(frozen=True)
class WatchEvent:
    claim: int
    device: int
    resource_version: int


class Relist:
    """The watch fell behind the event log; the informer must list everything again."""


RELIST = Relist()


class ApiServer:
    def __init__(
        self, runtime: Runtime, setup: Setup, lock: Lock, claims: int, devices: int
    ) -> None:
        self._runtime = runtime
        self.lock = lock
        self.claims = claims
        self.device = setup.array("dra.api.device", claims, NO_ID)
        self.rv = setup.array("dra.api.rv", claims)
        self.owner = setup.array("dra.api.owner", devices, NO_ID)
        self.counters = setup.array("dra.api.counters", 2)
        self.log_capacity = max(1024, 64 * claims)
        self.log_claim = setup.array("dra.api.log.claim", self.log_capacity)
        self.log_device = setup.array("dra.api.log.device", self.log_capacity)
        self.log_rv = setup.array("dra.api.log.rv", self.log_capacity)
        # Claims are created before the run with resourceVersions 1..claims.
        self.rv.np[:] = range(1, claims + 1)
        self.counters.mv[_RV] = claims

    def get(self, claim: int) -> tuple[int, int]:
        """(device, resourceVersion) as stored now."""
        with self.lock.held("get claim", claim=claim):
            return self.device.mv[claim], self.rv.mv[claim]

    def update_status(self, claim: int, expected_rv: int, device: int) -> int:
        """Set the claim's allocation if nobody changed it since ``expected_rv``; return new rv."""
        with self.lock.held("update claim status", claim=claim, device=device):
            if self.rv.mv[claim] != expected_rv:
                raise ApiConflict
            owner = self.owner.mv
            if device != NO_ID:
                holder = owner[device]
                if holder not in (NO_ID, claim):
                    self._runtime.violation(
                        "no-double-allocation",
                        device=device,
                        claim=holder,
                        other=claim,
                        worker=self._runtime.worker_id,
                    )
            old = self.device.mv[claim]
            if old != NO_ID and owner[old] == claim:
                owner[old] = NO_ID
            if device != NO_ID:
                owner[device] = claim
            counters = self.counters.mv
            new_rv = counters[_RV] + 1
            if new_rv <= self.rv.mv[claim]:
                self._runtime.violation(
                    "revision-monotonic", kind=1, previous=self.rv.mv[claim], current=new_rv
                )
            counters[_RV] = new_rv
            self.device.mv[claim] = device
            self.rv.mv[claim] = new_rv
            slot = counters[_EVENTS] % self.log_capacity
            self.log_claim.mv[slot] = claim
            self.log_device.mv[slot] = device
            self.log_rv.mv[slot] = new_rv
            counters[_EVENTS] += 1
            return new_rv

    def watch(self, cursor: int) -> WatchEvent | Relist | None:
        """The event at ``cursor``, None if there is none yet, RELIST if it was overwritten."""
        with self.lock.held("watch claims", cursor=cursor):
            appended = self.counters.mv[_EVENTS]
            if cursor >= appended:
                return None
            if cursor < appended - self.log_capacity:
                return RELIST
            slot = cursor % self.log_capacity
            return WatchEvent(
                self.log_claim.mv[slot], self.log_device.mv[slot], self.log_rv.mv[slot]
            )

    def list_claims(self) -> tuple[list[tuple[int, int, int]], int]:
        """Every claim as (claim, device, rv), and the log position to watch from."""
        with self.lock.held("list claims"):
            items = [(c, self.device.mv[c], self.rv.mv[c]) for c in range(self.claims)]
            return items, self.counters.mv[_EVENTS]

    @property
    def events_appended(self) -> int:
        return int(self.counters.mv[_EVENTS])
