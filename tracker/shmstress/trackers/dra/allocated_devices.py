"""Allocated devices: device -> claim, fed by assume-cache events, with a revision.

The revision changes with every mutation, which is what lets a gather detect
that it raced with an update (upstream ``allocateddevices.go``).
"""

from __future__ import annotations

from shmstress.api import Lock, Setup
from shmstress.trackers.common import mask_at_least
from shmstress.trackers.dra.names import NO_ID


class AllocatedDevices:
    def __init__(self, setup: Setup, lock: Lock, devices: int) -> None:
        self.lock = lock
        self.claim_of = setup.array("dra.allocated.claim", devices, NO_ID)
        self.revision_cell = setup.array("dra.allocated.revision", 1)

    def handle_event(self, claim: int, old: int, new: int) -> None:
        """The assume cache's event handler: remove the old device, add the new one."""
        if old == new:
            return
        with self.lock.held("Observed device allocation", claim=claim, device=new, old=old):
            claim_of = self.claim_of.mv
            if old != NO_ID:
                claim_of[old] = NO_ID
            if new != NO_ID:
                claim_of[new] = claim
            self.revision_cell.mv[0] += 1

    def get(self) -> tuple[list[bool], int]:
        """A copy of the allocated set (bool per device) and the revision it belongs to."""
        with self.lock.held("copy allocated devices"):
            return mask_at_least(self.claim_of, 0), self.revision_cell.mv[0]

    def revision(self) -> int:
        with self.lock.held("check revision"):
            return self.revision_cell.mv[0]
