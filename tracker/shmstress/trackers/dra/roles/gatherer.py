"""Gatherer: the scheduling cycle (pick a pod, gather allocated state, reserve a free device).

Cycles are serialized by one scheduling lock, as the scheduler runs one
scheduling loop: two unserialized cycles would double-allocate by design.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shmstress.api import Phase

if TYPE_CHECKING:
    from shmstress.trackers.dra.tracker import DraTracker

# Phase members as module constants: ``Phase.RUN`` is a class attribute lookup through the
# enum's metaclass, about half a microsecond, and every step of this role compares.
_STOP = Phase.STOP


class Gatherer:
    def __init__(self, tracker: DraTracker, index: int) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        if phase >= _STOP:
            return False
        t = self._t
        with t.scheduling_lock.held("Start scheduling cycle"):
            waiting = t.pods.waiting()
            unallocated = t.cache.unallocated()
            candidates = [claim for claim, free in enumerate(unallocated)
                          if free and waiting[claim]]
            if candidates:
                claim = candidates[self._rng.randrange(len(candidates))]
                gathered = t.claims.gather_allocated_state()
                free = [device for device, taken in enumerate(gathered) if not taken]
                if free:
                    device = free[self._rng.randrange(len(free))]
                    t.claims.signal_claim_pending_allocation(claim, device)
                    t.pods.hand_to_binder(claim, device)
                    return True
        return t.runtime.idle()  # nothing schedulable: let binders and informers move
