"""The device plugin's resource manager: GetPreferredAllocation, Allocate, and the cleanup.

The variant decides only the cleanup: which pod phases its list holds, and
whether it lists them while holding the cleanup mutex, in one consistent
list, or before taking it, one API call per phase. Upstream lists running
and pending pods in two API calls, then takes the mutex: a pod created after
the list and given an assignment before the mutex is taken looks like a
dead pod to the cleanup.
"""

from __future__ import annotations

import numpy as np

from shmstress.api import Lock, Runtime
from shmstress.trackers.gpu_assignments.assignments import Assignments
from shmstress.trackers.gpu_assignments.names import NO_ID
from shmstress.trackers.gpu_assignments.pod_store import PodStore
from shmstress.trackers.gpu_assignments.variants import Traits


class ResourceManager:
    def __init__(
        self,
        runtime: Runtime,
        pods: PodStore,
        assignments: Assignments,
        mutex: Lock,
        traits: Traits,
    ) -> None:
        self._runtime = runtime
        self.pods = pods
        self.assignments = assignments
        self.mutex = mutex
        self._traits = traits

    def get_preferred_allocation(self, slot: int, generation: int, card: int) -> None:
        self._runtime.point("Selected devices for container", pod=slot, generation=generation,
                            card=card)
        self.assignments.store(slot, generation, card)

    def allocate(self, slot: int, generation: int, card: int) -> None:
        """Allocate must find what GetPreferredAllocation stored for this still-pending pod."""
        runtime = self._runtime
        found = self.assignments.lookup(slot, generation)
        if found == NO_ID:
            runtime.point("Couldn't find allocation info from assignments", pod=slot,
                          generation=generation)
            runtime.violation(
                "assignment-found", pod=slot, generation=generation, card=card,
                kubelet=runtime.worker_id,
                remover=int(self.assignments.removed_by.mv[slot]),
                since=int(self.assignments.removed_since.mv[slot]),
            )

    def cleanup_pass(self) -> None:
        since = self._runtime.point("Running cleanup")
        if self._traits.list_under_mutex:
            with self.mutex.held("Cleanup takes the mutex"):
                keep, ordinal = self._list()
                self._prune(keep, ordinal, since)
        else:
            keep, ordinal = self._list()
            with self.mutex.held("Cleanup takes the mutex"):
                self._prune(keep, ordinal, since)

    def _list(self) -> tuple[np.ndarray, int]:
        """Generation per slot of every pod the cleanup keeps (NO_ID: drop its assignment)."""
        phases = self._traits.phases
        if self._traits.list_under_mutex:  # the fix: one consistent list of every phase
            return self.pods.list_phases(phases, begins_pass=True)
        keep, ordinal = self.pods.list_phases(phases[:1], begins_pass=True)
        for phase in phases[1:]:
            listed, _ = self.pods.list_phases((phase,), begins_pass=False)
            keep = np.where(listed != NO_ID, listed, keep)
        return keep, ordinal

    def _prune(self, keep: np.ndarray, ordinal: int, since: int) -> None:
        runtime = self._runtime
        for slot, generation in self.assignments.stale(keep):
            runtime.point("Removing from assignments", pod=slot, generation=generation)
            self.assignments.remove(slot, runtime.worker_id, since)
        for slot, generation, passes in self.pods.finish_pass(ordinal):
            if self.assignments.held_for(slot, generation):
                runtime.violation(
                    "no-stale-assignment", pod=slot, generation=generation,
                    card=int(self.assignments.card.mv[slot]), passes=passes,
                    cleanup=runtime.worker_id,
                )
