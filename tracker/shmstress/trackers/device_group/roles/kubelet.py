"""Kubelet: a running pod finishes after a hold and leaves its group (the last one frees it).

Holds count steps, not seconds, so a replayed run makes the same decisions.
While the run drains every running pod finishes at once, so that at rest
every group is released.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shmstress.api import Phase
from shmstress.trackers.device_group.api_server import PodState
from shmstress.trackers.device_group.names import NO_ID

if TYPE_CHECKING:
    from shmstress.trackers.device_group.tracker import DeviceGroupTracker


class Kubelet:
    def __init__(self, tracker: DeviceGroupTracker, index: int) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        t = self._t
        hold = t.hold_steps if phase is Phase.RUN else 0
        pod = t.api.finished_pod(self._rng.randrange(1 << 30), hold)
        if pod != NO_ID:
            t.plugin.pod_finished(pod)
            t.api.set_state(pod, PodState.PENDING)
            return True
        if phase is Phase.STOP and t.api.count_in(PodState.RUNNING) == 0:  # binders are done
            return False
        return t.runtime.idle()
