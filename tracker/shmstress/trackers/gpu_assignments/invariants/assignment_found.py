"""assignment-found: Allocate finds the assignment GetPreferredAllocation stored for its pod.

Checked in Allocate, for a pod that is still pending (only the kubelet that
admits it moves it on). When the entry is missing, the ghost record of who
removed it last names the cleanup pass that did, and where that pass began
(``since``: the explanation starts there).
"""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.api import Invariant, Scope, Workers
from shmstress.trackers.gpu_assignments import names
from shmstress.trackers.gpu_assignments.invariants.common import pod_scope
from shmstress.trackers.gpu_assignments.names import NO_ID


class AssignmentFound(Invariant):
    name = "assignment-found"
    summary = "Allocate finds the assignment GetPreferredAllocation stored for a pending pod"
    fields = ("pod", "generation", "card", "kubelet", "remover", "since")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        remover = fields["remover"]
        by = f"{workers.describe(remover)} removed it" if remover != NO_ID else \
            "nobody is recorded as removing it"
        return (
            f"Allocate by {workers.describe(fields['kubelet'])} found no assignment for "
            f"pending pod {names.pod(fields['pod'], fields['generation'])}, although "
            f"GetPreferredAllocation stored {names.card(fields['card'])} for it; {by}"
        )

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        """The pod; the cleanup pass that removed its assignment, from where that pass began."""
        remover, since = fields["remover"], fields["since"]
        return pod_scope(fields, worker=remover, start=since)
