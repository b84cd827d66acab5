"""no-reserve-while-deallocating: no pod joins ReservedFor of a claim being deallocated.

The rule the KEP states for DeallocationRequested. Checked in the API
server's claim status update, against the flag wherever the variant keeps
it, so the racy variant is caught at the root cause, before any pod is
left with a claim that is being freed under it. ``since`` is where the
scheduler's read of the flag began: the explanation starts at that stale read.
"""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.api import Invariant, Scope, Workers
from shmstress.trackers.claim_deallocation.invariants.common import reserve_scope
from shmstress.trackers.claim_deallocation.names import Naming


class NoReserveWhileDeallocating(Invariant):
    name = "no-reserve-while-deallocating"
    summary = "no pod is added to ReservedFor of a claim whose deallocation is requested"
    fields = ("claim", "pod", "worker", "since")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        names = Naming(params["pods-per-claim"])
        return (
            f"{workers.describe(fields['worker'])} added pod {names.pod(fields['pod'])} to "
            f"ReservedFor of claim {names.claim(fields['claim'])} while its deallocation was "
            "requested"
        )

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        return reserve_scope(fields)
