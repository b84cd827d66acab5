"""Deallocator: the scheduler's recovery path, asking for an allocated claim to be deallocated.

In the KEP this is what the scheduler does when a claim was allocated for a
node the pod cannot run on: set DeallocationRequested and wait for the
driver. Here it picks claims at random, so deallocation competes with
reservation all the time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shmstress.api import Phase

if TYPE_CHECKING:
    from shmstress.trackers.claim_deallocation.tracker import ClaimDeallocationTracker


class Deallocator:
    def __init__(self, tracker: ClaimDeallocationTracker, index: int) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        if phase >= Phase.DRAIN:  # no new requests while the run settles
            return False
        t = self._t
        return t.client.request_deallocation(self._rng.randrange(t.claims)) or t.runtime.idle()
