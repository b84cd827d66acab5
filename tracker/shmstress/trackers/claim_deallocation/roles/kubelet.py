"""Kubelet: running pods finish after a hold and leave ReservedFor of their claim.

Holds count steps, not seconds, so a replayed run makes the same decisions.
While the run drains every running pod finishes, so that claims whose
deallocation was requested can be deallocated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shmstress.api import Phase
from shmstress.trackers.claim_deallocation.api_server import PodPhase
from shmstress.trackers.claim_deallocation.names import NO_ID

if TYPE_CHECKING:
    from shmstress.trackers.claim_deallocation.tracker import ClaimDeallocationTracker


class Kubelet:
    def __init__(self, tracker: ClaimDeallocationTracker, index: int) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        t = self._t
        hold = t.hold_steps if phase is Phase.RUN else 0
        pod = t.api.age_running_pod(self._rng.randrange(1 << 30), hold)
        if pod != NO_ID:
            t.client.unreserve(pod)
            t.api.set_pod_phase(pod, PodPhase.WAITING)
            return True
        if phase is Phase.STOP and not t.api.any_running():  # STOP: the schedulers are done
            return False
        return t.runtime.idle()
