"""no-deallocate-while-reserved: a claim's hardware is never freed while a pod has it reserved.

The damage the race does: a pod was admitted to a claim the driver is
freeing. Checked by the driver at the moment it frees the hardware.
``since`` is where the driver's read of the claim began: the explanation
starts there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shmstress.core.workers import WorkerInfo, describe_worker
from shmstress.trackers.claim_deallocation.names import Naming


class NoDeallocateWhileReserved:
    name = "no-deallocate-while-reserved"
    summary = "no claim is deallocated while its ReservedFor is non-empty"
    fields = ("claim", "pod", "users", "worker", "since")

    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        names = Naming(params["pods-per-claim"])
        users = fields["users"]
        return (
            f"claim {names.claim(fields['claim'])} was deallocated by "
            f"{describe_worker(fields['worker'], workers)} while ReservedFor still held pod "
            f"{names.pod(fields['pod'])} ({users} user{'s' if users != 1 else ''})"
        )
