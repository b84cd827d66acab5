"""The API server's pods: pending, scheduled to a node, binding, running, and their annotation.

Scaffolding around the device tracker, kept simple and correct: one lock,
every transition under it. The annotation is what storeDeviceAllocation
patches onto the pod (the group's device mask); Unreserve reads it back.
"""

from __future__ import annotations

import enum

import numpy as np

from shmstress.api import Lock, Setup
from shmstress.trackers.common import age_one
from shmstress.trackers.device_group.names import NO_ID


class PodState(enum.IntEnum):
    PENDING = 0
    SCHEDULED = 1  # the scheduling cycle picked a node; waiting for a binder
    BINDING = 2
    RUNNING = 3


class ApiServer:
    def __init__(self, setup: Setup, lock: Lock, pods: int) -> None:
        self.lock = lock
        self.state = setup.array("devicegroup.pods.state", pods, PodState.PENDING)
        self.node = setup.array("devicegroup.pods.node", pods, NO_ID)
        self.annotation = setup.array("devicegroup.pods.annotation", pods, NO_ID)
        self.age = setup.array("devicegroup.pods.age", pods)

    def pending_pod(self, pick: int) -> int:
        with self.lock.held("List pending pods"):
            pending = np.flatnonzero(self.state.np == PodState.PENDING)
            return int(pending[pick % pending.size]) if pending.size else NO_ID

    def schedule(self, pod: int, node: int) -> None:
        with self.lock.held("Pod scheduled to node", pod=pod, node=node):
            self.state.mv[pod] = PodState.SCHEDULED
            self.node.mv[pod] = node

    def take_scheduled(self, pick: int) -> tuple[int, int]:
        """(pod, node) of a scheduled pod, now binding; (NO_ID, NO_ID) if there is none."""
        with self.lock.held("Take pod to bind"):
            scheduled = np.flatnonzero(self.state.np == PodState.SCHEDULED)
            if scheduled.size == 0:
                return NO_ID, NO_ID
            pod = int(scheduled[pick % scheduled.size])
            self.state.mv[pod] = PodState.BINDING
            return pod, int(self.node.mv[pod])

    def store_device_allocation(self, pod: int, mask: int) -> None:
        with self.lock.held("Stored device allocation", pod=pod, devices=mask):
            self.annotation.mv[pod] = mask

    def take_annotation(self, pod: int) -> int:
        """The pod's device annotation, removed from the pod (NO_ID if it had none)."""
        with self.lock.held("Read and clear device annotation", pod=pod):
            mask = int(self.annotation.mv[pod])
            self.annotation.mv[pod] = NO_ID
            return mask

    def set_state(self, pod: int, state: PodState) -> None:
        with self.lock.held("Pod state", pod=pod, state=state):
            self.state.mv[pod] = state
            self.age.mv[pod] = 0
            if state == PodState.PENDING:
                self.node.mv[pod] = NO_ID

    def finished_pod(self, pick: int, hold: int) -> int:
        """One running pod (chosen by ``pick``) ages a step; returns it once done, or NO_ID."""
        with self.lock.held("Pod runs"):
            return age_one(np.flatnonzero(self.state.np == PodState.RUNNING), self.age, pick,
                           hold)

    def count_in(self, *states: PodState) -> int:
        with self.lock.held("Count pods", states=len(states)):
            return int(np.count_nonzero(np.isin(self.state.np, states)))

    def all_pending(self) -> bool:
        """Coordinator-side read, no point: has every pod gone back to pending?"""
        return bool(np.all(self.state.np == PodState.PENDING))
