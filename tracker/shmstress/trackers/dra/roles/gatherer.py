"""Gatherer: the scheduling cycle (pick a pod, gather allocated state, reserve a free device).

Cycles are serialized by one scheduling lock, as the scheduler runs one
scheduling loop: two unserialized cycles would double-allocate by design.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from shmstress.api import Phase

if TYPE_CHECKING:
    from shmstress.trackers.dra.tracker import DraTracker


class Gatherer:
    def __init__(self, tracker: DraTracker, index: int) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        if phase >= Phase.STOP:
            return False
        t = self._t
        with t.scheduling_lock.held("Start scheduling cycle"):
            candidates = np.flatnonzero(t.pods.waiting() & t.cache.unallocated())
            if candidates.size:
                claim = int(candidates[self._rng.randrange(candidates.size)])
                free = np.flatnonzero(~t.claims.gather_allocated_state())
                if free.size:
                    device = int(free[self._rng.randrange(free.size)])
                    t.claims.signal_claim_pending_allocation(claim, device)
                    t.pods.hand_to_binder(claim, device)
                    return True
        return t.runtime.idle()  # nothing schedulable: let binders and informers move
