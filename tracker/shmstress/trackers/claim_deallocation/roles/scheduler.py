"""Scheduler: reserves a waiting pod's claim (adds the pod to ReservedFor), then binds the pod."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shmstress.api import Phase
from shmstress.trackers.claim_deallocation.api_server import PodPhase

if TYPE_CHECKING:
    from shmstress.trackers.claim_deallocation.tracker import ClaimDeallocationTracker


class Scheduler:
    def __init__(self, tracker: ClaimDeallocationTracker, index: int) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        if phase >= Phase.DRAIN:  # no new reservations while the run settles
            return False
        t = self._t
        pod = self._rng.randrange(t.pods)
        if t.api.pod_waiting(pod) and t.client.reserve(pod):
            t.api.set_pod_phase(pod, PodPhase.RUNNING)
            return True
        return t.runtime.idle()
