"""Controller: the rest of the cluster, creating pods, deleting running ones, collecting garbage.

Each step visits one pod slot: an absent pod is created (pending), a pod
running for ``hold-visits`` visits is deleted, a terminating pod that went
through two cleanups is removed for good. No creation or deletion once the
run drains. Every visit ends in a yield: the cluster's events are spaced in
time, and a controller that never yielded would keep the others from
running in controlled mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shmstress.api import Phase

if TYPE_CHECKING:
    from shmstress.trackers.gpu_assignments.tracker import GpuAssignmentsTracker


class Controller:
    def __init__(self, tracker: GpuAssignmentsTracker, index: int) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        if phase >= Phase.STOP:
            return False
        t = self._t
        t.pods.visit(self._rng.randrange(t.pod_slots), phase is Phase.RUN, t.hold_visits)
        return t.runtime.idle()
