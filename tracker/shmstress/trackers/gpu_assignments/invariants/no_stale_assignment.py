"""no-stale-assignment: no assignment of a deleted pod survives two cleanups.

Counted per pod: only passes that listed pods after the deletion count.
Checked at the end of every pass (under the cleanup mutex) and at rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from shmstress.api import Found, Invariant, Scope, Workers
from shmstress.trackers.gpu_assignments import names
from shmstress.trackers.gpu_assignments.invariants.common import pod_scope
from shmstress.trackers.gpu_assignments.names import NO_ID
from shmstress.trackers.gpu_assignments.pod_store import PodPhase

if TYPE_CHECKING:
    from shmstress.trackers.gpu_assignments.tracker import GpuAssignmentsTracker


class NoStaleAssignment(Invariant):
    name = "no-stale-assignment"
    summary = "no assignment of a deleted pod survives two cleanups"
    fields = ("pod", "generation", "card", "passes", "cleanup")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        seen = "at rest" if fields["cleanup"] == NO_ID else \
            f"seen by {workers.describe(fields['cleanup'])}"
        return (
            f"assignment of deleted pod {names.pod(fields['pod'], fields['generation'])} "
            f"({names.card(fields['card'])}) survived {fields['passes']} cleanups after the "
            f"deletion ({seen})"
        )

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        """The pod; the cleanup pass that kept its assignment (none when found at rest)."""
        return pod_scope(fields, worker=fields["cleanup"])

    def check_at_rest(self, tracker: GpuAssignmentsTracker) -> list[Found]:
        """At rest: an entry whose pod incarnation is gone or terminating after two passes."""
        pods, entries = tracker.pods, tracker.assignments
        found = []
        for slot in np.flatnonzero(entries.generation.np != NO_ID):
            generation = int(entries.generation.np[slot])
            alive = pods.generation.np[slot] == generation and pods.phase.np[slot] in (
                PodPhase.PENDING, PodPhase.RUNNING)
            passes = int(pods.cleanups_seen.np[slot])
            if not alive and (passes >= 2 or pods.generation.np[slot] != generation
                              or pods.phase.np[slot] == PodPhase.ABSENT):
                found.append(Found(self.name, {
                    "pod": int(slot), "generation": generation,
                    "card": int(entries.card.np[slot]), "passes": passes, "cleanup": NO_ID,
                }))
        return found
