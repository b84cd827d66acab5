"""no-deallocate-while-reserved: a claim's hardware is never freed while a pod has it reserved.

The damage the race does: a pod was admitted to a claim the driver is
freeing. Checked by the driver at the moment it frees the hardware.
``since`` is where the driver's read of the claim began: the explanation
starts there.
"""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.api import Invariant, Scope, Workers
from shmstress.trackers.claim_deallocation.invariants.common import reserve_scope
from shmstress.trackers.claim_deallocation.names import Naming


class NoDeallocateWhileReserved(Invariant):
    name = "no-deallocate-while-reserved"
    summary = "no claim is deallocated while its ReservedFor is non-empty"
    fields = ("claim", "pod", "users", "worker", "since")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        names = Naming(params["pods-per-claim"])
        users = fields["users"]
        return (
            f"claim {names.claim(fields['claim'])} was deallocated by "
            f"{workers.describe(fields['worker'])} while ReservedFor still held pod "
            f"{names.pod(fields['pod'])} ({users} user{'s' if users != 1 else ''})"
        )

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        return reserve_scope(fields)
