"""no-double-allocation: the API server never holds two claims on one device.

Checked inside ``update_status``, the one place where a second claim can take
a device (upstream's integration test words it the same way).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shmstress.core.workers import WorkerInfo, describe_worker
from shmstress.trackers.dra.invariants.common import naming


class NoDoubleAllocation:
    name = "no-double-allocation"
    summary = "the API server never holds two claims on one device"
    fields = ("device", "claim", "other", "worker")

    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        names = naming(params)
        return (
            f"device {names.device(fields['device'])} was allocated to claims "
            f"{names.claim(fields['claim'])} and {names.claim(fields['other'])} "
            f"(second allocation written by {describe_worker(fields['worker'], workers)})"
        )
