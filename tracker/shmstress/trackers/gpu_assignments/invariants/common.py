"""What the GPU assignments invariants share: a violation is about one pod incarnation."""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.api import Scope, Subject
from shmstress.trackers.gpu_assignments import names
from shmstress.trackers.gpu_assignments.names import NO_ID


def pod_scope(fields: Mapping[str, int], worker: int, start: int = NO_ID) -> Scope:
    """The pod slot, named with the incarnation the violation is about; ``worker`` and
    ``start`` when known (NO_ID: not)."""
    pod: Subject = ("pod", fields["pod"])
    return Scope(
        subjects=(pod,),
        worker=None if worker == NO_ID else worker,
        start=None if start == NO_ID else start,
        names={pod: f'pod "{names.pod(fields["pod"], fields["generation"])}"'},
    )
