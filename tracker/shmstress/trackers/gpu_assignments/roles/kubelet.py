"""Kubelet: admits pending pods, calling GetPreferredAllocation and then Allocate for each.

One admission is one step. Between the two calls the kubelet does other
work (a yield, then a point of its own): time passes there, which is the
window the seed's comment warns about, and where controlled mode's PCT
lets the others run. Several kubelet workers stand for concurrent plugin
calls; each takes a different pod.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from shmstress.api import Phase
from shmstress.trackers.gpu_assignments.names import NO_ID

if TYPE_CHECKING:
    from shmstress.trackers.gpu_assignments.tracker import GpuAssignmentsTracker


class Kubelet:
    def __init__(self, tracker: GpuAssignmentsTracker, index: int) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        t = self._t
        slot, generation = t.pods.next_candidate(t.runtime.worker_id)
        if slot == NO_ID:
            if phase is Phase.STOP:  # STOP: the controller is done, no pod will come
                return False
            return t.runtime.idle()
        card = self._rng.randrange(t.cards)
        t.manager.get_preferred_allocation(slot, generation, card)
        os.sched_yield()
        t.runtime.point("Kubelet calls Allocate", pod=slot, generation=generation)
        t.manager.allocate(slot, generation, card)
        t.pods.start_running(slot, generation)
        return True
