"""no-shared-device: no device is ever held by two groups, nor allocated twice.

Checked in the device tracker's allocate, the one place a device gets a
group: allocating a device that is not free is the double allocation that
select-then-allocate lets through. Two groups racing give one device to
both; two pods of one group racing (both find the group unbound) allocate
the same devices twice for it, which counts them out of the node's free
count twice. That second case must be caught here too: otherwise its first
symptom is a free count that disagrees at some later release on the node
(rollback-restores-free), whose story starts far from the race. ``since``
is where the reporting PreBind began.
"""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.api import Invariant, Scope, Workers
from shmstress.trackers.device_group.invariants.common import device_subject, naming, scope


class NoSharedDevice(Invariant):
    name = "no-shared-device"
    summary = "no device is held by two groups or allocated twice"
    fields = ("node", "device", "group", "other", "worker", "since")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        names = naming(params)
        group, other = fields["group"], fields["other"]
        held = f"{names.group(other)} already held it" if other == group else \
            f"{names.group(other)} held it"
        return (
            f"device {names.device(fields['node'], fields['device'])} was allocated to "
            f"{names.group(group)} by {workers.describe(fields['worker'])} while {held}"
        )

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        # The node too: its SelectDevices name no device.
        node, group, other = fields["node"], fields["group"], fields["other"]
        groups = (("group", group),) if other == group else (("group", group), ("group", other))
        return scope((device_subject(params, node, fields["device"]), *groups, ("node", node)),
                     fields)
