"""The pods on this node as the API server lists them: pending, running, terminating, gone.

Scaffolding around the structure under test, kept simple and correct: one
lock, every transition under it. A pod slot is reused by a new incarnation
(next generation) only after the terminating pod went through two cleanup
passes that started after its deletion, so a stale assignment is always
caught before its slot is reused.

The pass bookkeeping is what ``no-stale-assignment`` needs: every cleanup
pass takes an ordinal when it lists pods (atomically with the list), and a
pass counts for a deleted pod only if it listed after the deletion.

What the controller does to a pod is a point of its own inside the lock
("Created pod", ...), so logs and explanations say what happened, not only
that a pod was visited.
"""

from __future__ import annotations

import enum
import os

import numpy as np

from shmstress.api import Lock, Runtime, Setup
from shmstress.trackers.gpu_assignments.names import NO_ID

_CREATED = 0
_PASSES = 1


class PodPhase(enum.IntEnum):
    ABSENT = 0
    PENDING = 1
    RUNNING = 2
    TERMINATING = 3  # deletion requested; the pod object still exists


class PodStore:
    def __init__(self, runtime: Runtime, setup: Setup, lock: Lock, pods: int) -> None:
        self._runtime = runtime
        self.lock = lock
        self.phase = setup.array("gpu.pods.phase", pods, PodPhase.ABSENT)
        self.generation = setup.array("gpu.pods.generation", pods)
        self.created_at = setup.array("gpu.pods.created_at", pods)
        self.admitted_by = setup.array("gpu.pods.admitted_by", pods, NO_ID)
        self.age = setup.array("gpu.pods.age", pods)
        self.deleted_pass = setup.array("gpu.pods.deleted_pass", pods)
        self.cleanups_seen = setup.array("gpu.pods.cleanups_seen", pods)
        self.counters = setup.array("gpu.pods.counters", 2)

    # -- the kubelet's side ---------------------------------------------------------------
    def next_candidate(self, kubelet: int) -> tuple[int, int]:
        """(slot, generation) of the oldest pending pod no kubelet took yet, or (NO_ID, NO_ID)."""
        with self.lock.held("List pending pods on node"):
            phase = self.phase.np
            free = np.flatnonzero((phase == PodPhase.PENDING) & (self.admitted_by.np == NO_ID))
            if free.size == 0:
                return NO_ID, NO_ID
            slot = int(free[np.argmin(self.created_at.np[free])])
            self.admitted_by.mv[slot] = kubelet
            return slot, int(self.generation.mv[slot])

    def start_running(self, slot: int, generation: int) -> None:
        with self.lock.held("Pod started", pod=slot, generation=generation):
            self.phase.mv[slot] = PodPhase.RUNNING
            self.age.mv[slot] = 0

    # -- the cleanup's side ---------------------------------------------------------------
    def list_phases(
        self, phases: tuple[PodPhase, ...], begins_pass: bool
    ) -> tuple[np.ndarray, int]:
        """Generation per slot of pods in ``phases`` (NO_ID elsewhere), and the pass ordinal."""
        names = ",".join(phase.name.lower() for phase in phases)
        with self.lock.held("List pods on node", phase=names):
            ordinal = 0
            if begins_pass:
                ordinal = self.counters.mv[_PASSES] + 1
                self.counters.mv[_PASSES] = ordinal
            listed = np.where(np.isin(self.phase.np, phases), self.generation.np, NO_ID)
        os.sched_yield()  # an API call: time passes while its response travels back
        return listed, ordinal

    def finish_pass(self, ordinal: int) -> list[tuple[int, int, int]]:
        """Count this pass for pods deleted before it listed; (slot, gen, passes) of those >= 2."""
        with self.lock.held("Cleanup done", ordinal=ordinal):
            counted = np.flatnonzero(
                (self.phase.np == PodPhase.TERMINATING) & (self.deleted_pass.np < ordinal)
            )
            overdue = []
            for slot in counted:
                seen = self.cleanups_seen.mv[slot] + 1
                self.cleanups_seen.mv[slot] = seen
                if seen >= 2:
                    overdue.append((int(slot), int(self.generation.mv[slot]), int(seen)))
            return overdue

    # -- the controller's side ------------------------------------------------------------
    def visit(self, slot: int, churn: bool, hold: int) -> None:
        """Create, delete or garbage-collect the pod in ``slot`` as its phase allows."""
        point = self._runtime.point
        with self.lock.held("Sync pod", slot=slot):
            phase = self.phase.mv[slot]
            generation = int(self.generation.mv[slot])
            if phase == PodPhase.ABSENT and churn:
                point("Created pod", pod=slot, generation=generation + 1)
                counters = self.counters.mv
                self.generation.mv[slot] = generation + 1
                self.created_at.mv[slot] = counters[_CREATED]
                counters[_CREATED] += 1
                self.admitted_by.mv[slot] = NO_ID
                self.cleanups_seen.mv[slot] = 0
                self.phase.mv[slot] = PodPhase.PENDING
            elif phase == PodPhase.RUNNING and churn:
                age = self.age.mv[slot] + 1
                self.age.mv[slot] = age
                if age >= hold:
                    point("Deleted pod", pod=slot, generation=generation)
                    self.deleted_pass.mv[slot] = self.counters.mv[_PASSES]
                    self.phase.mv[slot] = PodPhase.TERMINATING
            elif phase == PodPhase.TERMINATING and self.cleanups_seen.mv[slot] >= 2:
                point("Removed pod", pod=slot, generation=generation)
                self.phase.mv[slot] = PodPhase.ABSENT

    def any_pending(self) -> bool:
        """Coordinator-side read: is any pod still waiting for the kubelet?"""
        return bool(np.any(self.phase.np == PodPhase.PENDING))
