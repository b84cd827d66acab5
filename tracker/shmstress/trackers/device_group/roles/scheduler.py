"""Scheduler: the scheduling cycle (pick a pending pod, Filter a node, hand it to a binder).

Cycles are serialized by one scheduling lock, as the scheduler runs one
scheduling loop; the race is between binding cycles, which run in parallel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shmstress.api import Phase
from shmstress.trackers.device_group.names import NO_ID

if TYPE_CHECKING:
    from shmstress.trackers.device_group.tracker import DeviceGroupTracker


class Scheduler:
    def __init__(self, tracker: DeviceGroupTracker, index: int) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        if phase >= Phase.DRAIN:  # nothing new is scheduled while the run settles
            return False
        t = self._t
        with t.scheduling_lock.held("Start scheduling cycle"):
            pod = t.api.pending_pod(self._rng.randrange(1 << 30))
            if pod != NO_ID:
                node = t.plugin.filter(pod, self._rng)
                if node != NO_ID:
                    t.api.schedule(pod, node)
                    return True
        return t.runtime.idle()  # nothing schedulable: let binders and the kubelet move
