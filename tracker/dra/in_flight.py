"""In-flight claims: claim -> device picked in a scheduling cycle, not yet assumed.

Upstream keeps this in a ``sync.Map``; a Range sees one entry at a time. Here a
range is one point that copies the whole map, which is enough for the races
between structures this tracker is about.
"""

from __future__ import annotations

import numpy as np

from harness.locks import InstrumentedLock
from harness.shm import Arena
from tracker.dra.coverage import Coverage
from tracker.dra.names import NONE


class InFlightClaims:
    def __init__(
        self, arena: Arena, lock: InstrumentedLock, coverage: Coverage, claims: int
    ) -> None:
        self.lock = lock
        self.device = arena.array("dra.inflight.device", claims, NONE)
        self._coverage = coverage

    def store(self, claim: int, device: int) -> None:
        with self.lock.held("Signal claim pending allocation", claim=claim, device=device):
            old = self.device.mv[claim]
            self.device.mv[claim] = device
            self._coverage.changed(claim, old, device)

    def remove(self, claim: int) -> bool:
        with self.lock.held("Removed in-flight claim", claim=claim):
            old = self.device.mv[claim]
            if old == NONE:
                return False
            self.device.mv[claim] = NONE
            self._coverage.changed(claim, old, NONE)
            return True

    def has(self, claim: int) -> bool:
        with self.lock.held("check pending allocation", claim=claim):
            return self.device.mv[claim] != NONE

    def devices(self) -> np.ndarray:
        """Devices of every in-flight claim (the Range of upstream's gather)."""
        with self.lock.held("Device is in flight for allocation"):
            held = self.device.np
            return held[held >= 0].copy()
