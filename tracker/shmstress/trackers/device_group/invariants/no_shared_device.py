"""no-shared-device: no device is ever held by two groups.

Checked in the device tracker's allocate, the one place a device gets a
group: allocating a device another group holds is the double allocation
that select-then-allocate lets through. ``since`` is where the reporting
PreBind began.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shmstress.core.workers import WorkerInfo, describe_worker
from shmstress.trackers.device_group.names import Naming


class NoSharedDevice:
    name = "no-shared-device"
    summary = "no device is held by two groups"
    fields = ("node", "device", "group", "other", "worker", "since")

    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        names = Naming(params["pods-per-group"])
        return (
            f"device {names.device(fields['node'], fields['device'])} was allocated to "
            f"{names.group(fields['group'])} by {describe_worker(fields['worker'], workers)} "
            f"while {names.group(fields['other'])} held it"
        )
