"""Kubelet: admits pending pods, calling GetPreferredAllocation and then Allocate for each.

One admission is one step. Between the two calls the kubelet does other
work (a point of its own), which is the window the cleanup can fall into.
Several kubelet workers stand for concurrent plugin calls; each takes a
different pod.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from harness.control import Phase
from tracker.gpu_assignments.names import NONE

if TYPE_CHECKING:
    from tracker.gpu_assignments.tracker import GpuAssignmentsTracker


class Kubelet:
    def __init__(self, tracker: GpuAssignmentsTracker) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        t = self._t
        slot, generation = t.pods.next_candidate(t.runtime.worker_id)
        if slot == NONE:
            if phase >= Phase.STOP and t.runtime.role_finished("controller"):
                return False
            os.sched_yield()
            return True
        card = self._rng.randrange(t.cards)
        t.manager.get_preferred_allocation(slot, generation, card)
        t.runtime.point("Kubelet calls Allocate", pod=slot)
        t.manager.allocate(slot, generation, card)
        t.pods.start_running(slot)
        return True
