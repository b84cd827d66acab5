"""no-double-allocation: the API server never holds two claims on one device.

Checked inside ``update_status``, the one place where a second claim can take
a device (upstream's integration test words it the same way).
"""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.api import Invariant, Scope, Workers
from shmstress.trackers.dra.invariants.common import naming


class NoDoubleAllocation(Invariant):
    name = "no-double-allocation"
    summary = "the API server never holds two claims on one device"
    fields = ("device", "claim", "other", "worker")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        names = naming(params)
        return (
            f"device {names.device(fields['device'])} was allocated to claims "
            f"{names.claim(fields['claim'])} and {names.claim(fields['other'])} "
            f"(second allocation written by {workers.describe(fields['worker'])})"
        )

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        return Scope(
            subjects=(("device", fields["device"]), ("claim", fields["claim"]),
                      ("claim", fields["other"])),
            worker=fields["worker"],
        )
