"""no-stale-assignment: no assignment of a deleted pod survives two cleanups.

Counted per pod: only passes that listed pods after the deletion count.
Checked at the end of every pass (under the cleanup mutex) and at rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from shmstress.core.workers import WorkerInfo, describe_worker
from shmstress.plugin.protocol import FoundViolation
from shmstress.trackers.gpu_assignments import names
from shmstress.trackers.gpu_assignments.names import NONE
from shmstress.trackers.gpu_assignments.pod_store import PodPhase

if TYPE_CHECKING:
    from shmstress.trackers.gpu_assignments.tracker import GpuAssignmentsTracker


class NoStaleAssignment:
    name = "no-stale-assignment"
    summary = "no assignment of a deleted pod survives two cleanups"
    fields = ("pod", "generation", "card", "passes", "cleanup")

    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        seen = "at rest" if fields["cleanup"] == NONE else \
            f"seen by {describe_worker(fields['cleanup'], workers)}"
        return (
            f"assignment of deleted pod {names.pod(fields['pod'], fields['generation'])} "
            f"({names.card(fields['card'])}) survived {fields['passes']} cleanups after the "
            f"deletion ({seen})"
        )

    def check_at_rest(self, tracker: GpuAssignmentsTracker) -> list[FoundViolation]:
        """At rest: an entry whose pod incarnation is gone or terminating after two passes."""
        pods, entries = tracker.pods, tracker.assignments
        found = []
        for slot in np.flatnonzero(entries.generation.np != NONE):
            generation = int(entries.generation.np[slot])
            alive = pods.generation.np[slot] == generation and pods.phase.np[slot] in (
                PodPhase.PENDING, PodPhase.RUNNING)
            passes = int(pods.cleanups_seen.np[slot])
            if not alive and (passes >= 2 or pods.generation.np[slot] != generation
                              or pods.phase.np[slot] == PodPhase.ABSENT):
                found.append(FoundViolation(self.name, {
                    "pod": int(slot), "generation": generation,
                    "card": int(entries.card.np[slot]), "passes": passes, "cleanup": NONE,
                }))
        return found
