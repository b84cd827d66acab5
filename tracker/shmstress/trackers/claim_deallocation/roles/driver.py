"""Driver: the resource driver's controller, deallocating requested claims and allocating free ones.

Driver workers split the claims between them (claim modulo worker count),
as a work queue keyed by claim never hands one claim to two workers at once.
A sync with nothing to do yields, as a controller waits for its next event.
It stops once every other role finished and no deallocation is pending.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shmstress.api import Phase

if TYPE_CHECKING:
    from shmstress.trackers.claim_deallocation.tracker import ClaimDeallocationTracker


class Driver:
    def __init__(self, tracker: ClaimDeallocationTracker, index: int) -> None:
        self._t = tracker
        workers = max(1, tracker.drivers)
        self._mine = [c for c in range(tracker.claims) if c % workers == index]
        self._next = 0

    def step(self, phase: Phase) -> bool:
        t = self._t
        if not self._mine:  # more driver workers than claims: nothing of its own to do
            return False
        # STOP: the schedulers, kubelets and deallocators are done
        if phase is Phase.STOP and self._next == 0 and not t.api.any_request():
            return False
        acted = t.client.sync(self._mine[self._next])
        self._next = (self._next + 1) % len(self._mine)
        return acted or t.runtime.idle()
