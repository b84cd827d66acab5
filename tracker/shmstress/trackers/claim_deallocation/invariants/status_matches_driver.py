"""status-matches-driver: at rest, claim status and driver agree and nothing is left half-done.

Checked by the coordinator once every worker stopped: each claim's status
says allocated exactly when the driver holds its hardware, no
deallocation request is left over, and no pod is still in ReservedFor.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING

from shmstress.api import Found, Invariant, Scope, Workers
from shmstress.trackers.claim_deallocation.names import Naming

if TYPE_CHECKING:
    from shmstress.trackers.claim_deallocation.tracker import ClaimDeallocationTracker


class Disagreement(enum.IntEnum):
    ALLOCATION = 0
    REQUEST_LEFT = 1
    RESERVED_LEFT = 2


class StatusMatchesDriver(Invariant):
    name = "status-matches-driver"
    summary = "at rest: claim status equals the driver's allocation, no request or user left"
    fields = ("kind", "claim", "status", "driver")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        claim = Naming.claim(fields["claim"])
        kind = fields["kind"]
        if kind == Disagreement.REQUEST_LEFT:
            return f"claim {claim} still has its deallocation requested at rest"
        if kind == Disagreement.RESERVED_LEFT:
            return f"claim {claim} still has users in ReservedFor at rest (mask {fields['status']})"
        return (
            f"claim {claim} status says allocated={bool(fields['status'])} but the driver "
            f"says allocated={bool(fields['driver'])}"
        )

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        return Scope(subjects=(("claim", fields["claim"]),))

    def check_at_rest(self, tracker: ClaimDeallocationTracker) -> list[Found]:
        api, backend = tracker.api, tracker.backend
        found: list[Found] = []
        for claim in range(tracker.claims):
            status, driver = int(api.allocated.np[claim]), int(backend.allocated.np[claim])
            if status != driver:
                found.append(self._found(Disagreement.ALLOCATION, claim, status, driver))
            if api.requested.np[claim] or api.scheduling_requested.np[claim]:
                found.append(self._found(Disagreement.REQUEST_LEFT, claim, 1, driver))
            if api.reserved_for.np[claim]:
                found.append(self._found(Disagreement.RESERVED_LEFT, claim,
                                         int(api.reserved_for.np[claim]), driver))
        return found

    def _found(self, kind: Disagreement, claim: int, status: int, driver: int) -> Found:
        return Found(
            self.name, {"kind": kind, "claim": claim, "status": status, "driver": driver}
        )
