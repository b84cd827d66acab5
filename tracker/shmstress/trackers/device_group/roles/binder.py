"""Binder: the binding cycle (PreBind, then Bind; Unreserve when either fails).

Binding cycles of different pods run in parallel, which is where PreBind's
check-then-act races. Bind itself fails with a configured probability, so
Unreserve's rollback runs all the time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shmstress.api import Phase
from shmstress.trackers.device_group.api_server import PodState
from shmstress.trackers.device_group.names import NO_ID

if TYPE_CHECKING:
    from shmstress.trackers.device_group.tracker import DeviceGroupTracker


class Binder:
    def __init__(self, tracker: DeviceGroupTracker, index: int) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng

    def step(self, phase: Phase) -> bool:
        t = self._t
        pod, node = t.api.take_scheduled(self._rng.randrange(1 << 30))
        if pod == NO_ID:
            if phase is Phase.STOP and \
                    t.api.count_in(PodState.SCHEDULED, PodState.BINDING) == 0:  # scheduler done
                return False
            return t.runtime.idle()
        if t.plugin.pre_bind(pod, node, self._rng) and self._bind(pod):
            t.api.set_state(pod, PodState.RUNNING)
            return True
        t.plugin.unreserve(pod)
        t.api.set_state(pod, PodState.PENDING)
        return True

    def _bind(self, pod: int) -> bool:
        if self._rng.random() * 100 < self._t.bind_error_percent:
            self._t.runtime.point("Binding rejected", pod=pod)
            return False
        return True
