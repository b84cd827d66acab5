"""no-shared-device: no device is ever held by two groups.

Checked in the device tracker's allocate, the one place a device gets a
group: allocating a device another group holds is the double allocation
that select-then-allocate lets through. ``since`` is where the reporting
PreBind began.
"""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.api import Invariant, Scope, Workers
from shmstress.trackers.device_group.invariants.common import device_subject, naming, scope


class NoSharedDevice(Invariant):
    name = "no-shared-device"
    summary = "no device is held by two groups"
    fields = ("node", "device", "group", "other", "worker", "since")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        names = naming(params)
        return (
            f"device {names.device(fields['node'], fields['device'])} was allocated to "
            f"{names.group(fields['group'])} by {workers.describe(fields['worker'])} "
            f"while {names.group(fields['other'])} held it"
        )

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        # The node too: its SelectDevices name no device.
        node = fields["node"]
        return scope((device_subject(params, node, fields["device"]), ("group", fields["group"]),
                      ("group", fields["other"]), ("node", node)), fields)
