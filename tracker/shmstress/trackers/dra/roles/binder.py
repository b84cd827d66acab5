"""Binder: the binding cycle (PreBind: API update, assume, drop in-flight; then Bind).

Bound claims are released through the API after a hold of a few binder
steps, so churn never stops; an injected API error takes the Unreserve path.
Holds count steps, not seconds, so a replayed run makes the same decisions.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from shmstress.api import Phase
from shmstress.trackers.common import ApiConflict
from shmstress.trackers.dra.names import NO_ID
from shmstress.trackers.dra.pod_queue import PodState

if TYPE_CHECKING:
    from shmstress.trackers.dra.tracker import DraTracker

# Phase members as module constants: ``Phase.RUN`` is a class attribute lookup through the
# enum's metaclass, about half a microsecond, and every step of this role compares.
_RUN = Phase.RUN
_STOP = Phase.STOP
_WAITING = PodState.WAITING
_BOUND = PodState.BOUND


class Binder:
    def __init__(self, tracker: DraTracker, index: int) -> None:
        self._t = tracker
        self._rng = tracker.runtime.rng
        self._draw = self._rng.getrandbits
        self._steps = 0
        self._held: deque[tuple[int, int]] = deque()

    def step(self, phase: Phase) -> bool:
        t = self._t
        self._steps += 1
        # randrange(1 << 30), inlined (Random._randbelow_with_getrandbits: the same draws,
        # hence the same trace for a seed, without two Python calls at every binder step)
        start = self._draw(31)
        while start >= 1 << 30:
            start = self._draw(31)
        claim, device = t.pods.take(t.runtime.worker_id, start)
        if claim != NO_ID:
            self._bind(claim, device)
            return True
        if phase is _RUN and self._held and self._held[0][0] <= self._steps:
            self._release(self._held.popleft()[1])
            return True
        if phase is _STOP and not t.pods.outstanding():  # STOP: the gatherers are done
            return False
        return t.runtime.idle()

    def _bind(self, claim: int, device: int) -> None:
        t = self._t
        if self._rng.random() * 100 < t.api_error_percent:
            t.runtime.point("Unreserve after API error", claim=claim)
            t.claims.remove_claim_pending_allocation(claim)
            t.claims.assumed_claim_restore(claim)
            t.pods.finish(claim, _WAITING)
            return
        rv = self._write(claim, device)
        t.claims.assume_claim_after_api_call(claim, device, rv)
        t.claims.remove_claim_pending_allocation(claim)
        t.runtime.point("Attempting to bind pod to node", pod=claim, device=device)
        t.pods.finish(claim, _BOUND)
        self._held.append((self._steps + t.hold_steps, claim))

    def _release(self, claim: int) -> None:
        self._write(claim, NO_ID)
        self._t.pods.finish(claim, _WAITING)

    def _write(self, claim: int, device: int) -> int:
        """update_status with optimistic concurrency: re-read and retry on conflict."""
        api = self._t.api
        while True:
            _, rv = api.get(claim)
            try:
                return api.update_status(claim, rv, device)
            except ApiConflict:
                continue
