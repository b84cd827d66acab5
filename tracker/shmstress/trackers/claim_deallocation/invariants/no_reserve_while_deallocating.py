"""no-reserve-while-deallocating: no pod joins ReservedFor of a claim being deallocated.

The rule the KEP states for DeallocationRequested. Checked in the API
server's claim status update, against the flag wherever the variant keeps
it, so the racy variant is caught at the root cause, before any pod is
left with a claim that is being freed under it. ``since`` is where the
scheduler's read of the flag began: the explanation starts at that stale read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shmstress.core.workers import WorkerInfo, describe_worker
from shmstress.trackers.claim_deallocation.names import Naming


class NoReserveWhileDeallocating:
    name = "no-reserve-while-deallocating"
    summary = "no pod is added to ReservedFor of a claim whose deallocation is requested"
    fields = ("claim", "pod", "worker", "since")

    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        names = Naming(params["pods-per-claim"])
        return (
            f"{describe_worker(fields['worker'], workers)} added pod {names.pod(fields['pod'])} to "
            f"ReservedFor of claim {names.claim(fields['claim'])} while its deallocation was "
            "requested"
        )
