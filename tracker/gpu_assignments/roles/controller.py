"""Controller: the rest of the cluster, creating pods, deleting running ones, collecting garbage.

Each step visits one pod slot: an absent pod is created (pending), a pod
running for ``hold-visits`` visits is deleted, a terminating pod that went
through two cleanups is removed for good. No creation or deletion once the
run drains.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.control import Phase

if TYPE_CHECKING:
    from tracker.gpu_assignments.tracker import GpuAssignmentsTracker


class Controller:
    def __init__(self, tracker: GpuAssignmentsTracker) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        if phase >= Phase.STOP:
            return False
        t = self._t
        t.pods.visit(self._rng.randrange(t.pod_slots), phase is Phase.RUN, t.hold_visits)
        return True
