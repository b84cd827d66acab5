"""In-flight claims: claim -> device picked in a scheduling cycle, not yet assumed.

Upstream keeps this in a ``sync.Map``; a Range sees one entry at a time. Here a
range is one point that copies the whole map, which is enough for the races
between structures this tracker is about; like upstream it logs each device it
finds in flight (a log call, not a point).
"""

from __future__ import annotations

from shmstress.api import Lock, Runtime, Setup
from shmstress.trackers.common import where_at_least
from shmstress.trackers.dra.coverage import Coverage
from shmstress.trackers.dra.names import NO_ID


class InFlightClaims:
    def __init__(
        self,
        runtime: Runtime,
        setup: Setup,
        lock: Lock,
        coverage: Coverage,
        claims: int,
    ) -> None:
        self._runtime = runtime
        self.lock = lock
        self.device = setup.array("dra.inflight.device", claims, NO_ID)
        self._coverage = coverage

    def store(self, claim: int, device: int) -> None:
        with self.lock.held("Signal claim pending allocation", claim=claim, device=device):
            old = self.device.mv[claim]
            self.device.mv[claim] = device
            self._coverage.changed(claim, old, device)

    def remove(self, claim: int) -> bool:
        with self.lock.held("Removed in-flight claim", claim=claim):
            old = self.device.mv[claim]
            if old == NO_ID:
                return False
            self.device.mv[claim] = NO_ID
            self._coverage.changed(claim, old, NO_ID)
            return True

    def has(self, claim: int) -> bool:
        with self.lock.held("check pending allocation", claim=claim):
            return self.device.mv[claim] != NO_ID

    def devices(self) -> list[int]:
        """Devices of every in-flight claim, in claim order (the Range of upstream's gather)."""
        with self.lock.held("check in-flight claims"):
            held = self.device.mv
            devices = []
            for claim in where_at_least(self.device, 0):
                device = held[claim]
                self._runtime.log("Device is in flight for allocation", device=device, claim=claim)
                devices.append(device)
            return devices
