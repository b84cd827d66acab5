"""The scheduler's pods, one per claim: waiting, handed to a binder, bound.

Not one of the upstream structures under test but the scaffolding around
them (the scheduling queue and the binding goroutines' hand-off), so it is
kept simple and correct: one lock, every transition under it.
"""

from __future__ import annotations

import enum

from shmstress.api import Lock, Setup
from shmstress.trackers.common import mask_equal, where_equal
from shmstress.trackers.dra.names import NO_ID


class PodState(enum.IntEnum):
    WAITING = 0
    TO_BIND = 1
    BINDING = 2
    BOUND = 3


# Arrays are compared with plain ints: an IntEnum member compares several times slower (numpy
# looks for ``__array_ufunc__`` on the enum class, and Python's == goes through the enum's
# type), and every binder and gatherer step compares.
_WAITING = int(PodState.WAITING)
_TO_BIND = int(PodState.TO_BIND)
_BINDING = int(PodState.BINDING)
_BOUND = int(PodState.BOUND)


class PodQueue:
    def __init__(self, setup: Setup, lock: Lock, claims: int) -> None:
        self.lock = lock
        self.state = setup.array("dra.pods.state", claims, PodState.WAITING)
        self.device = setup.array("dra.pods.device", claims, NO_ID)
        self.binder = setup.array("dra.pods.binder", claims, NO_ID)

    def waiting(self) -> list[bool]:
        """Bool per claim: its pod waits for a scheduling cycle."""
        with self.lock.held("pick pod"):
            return mask_equal(self.state, _WAITING)

    def hand_to_binder(self, claim: int, device: int) -> None:
        with self.lock.held("hand pod to binder", claim=claim, device=device):
            self.state.mv[claim] = _TO_BIND
            self.device.mv[claim] = device

    def take(self, binder: int, start: int) -> tuple[int, int]:
        """(claim, device) of a pod waiting for a binder, or (NO_ID, NO_ID)."""
        with self.lock.held("take pod to bind"):
            waiting = where_equal(self.state, _TO_BIND)
            if not waiting:
                return NO_ID, NO_ID
            claim = waiting[start % len(waiting)]
            self.state.mv[claim] = _BINDING
            self.binder.mv[claim] = binder
            return claim, self.device.mv[claim]

    def finish(self, claim: int, state: PodState) -> None:
        with self.lock.held("pod state", claim=claim, state=int(state)):
            self.state.mv[claim] = state
            if state == _WAITING:
                self.device.mv[claim] = NO_ID
                self.binder.mv[claim] = NO_ID

    def outstanding(self) -> bool:
        """Pods handed to binders and not yet bound or returned (read without a point)."""
        states = self.state.mv.tolist()
        return _TO_BIND in states or _BINDING in states

    def all_bound(self) -> bool:
        """Asked by the coordinator before every grant of a controlled drain."""
        states = self.state.mv.tolist()
        return states.count(_BOUND) == len(states)
