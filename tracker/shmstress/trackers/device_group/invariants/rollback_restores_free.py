"""rollback-restores-free: giving devices back restores exactly what the group took.

Checked at every release (the last user leaving, Unreserve, a failed
PreBind's rollback): each device given back was held by that group, and
the node's free count equals its devices actually free. At rest, when every
pod has gone, no device may still be held and every free count is full.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from shmstress.core.workers import WorkerInfo, describe_worker
from shmstress.plugin.protocol import FoundViolation
from shmstress.trackers.device_group.device_tracker import ReleaseProblem
from shmstress.trackers.device_group.names import NONE, Naming

if TYPE_CHECKING:
    from shmstress.trackers.device_group.tracker import DeviceGroupTracker


class RollbackRestoresFree:
    name = "rollback-restores-free"
    summary = "a release gives back exactly the group's devices; free counts stay exact"
    fields = ("kind", "node", "device", "group", "holder", "free", "actual", "worker", "since")

    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        names = Naming(params["pods-per-group"])
        node, group = fields["node"], names.group(fields["group"])
        who = describe_worker(fields["worker"], workers)
        kind = fields["kind"]
        if kind == ReleaseProblem.NOT_HELD:
            holder = fields["holder"]
            held = "it was already free" if holder == NONE else \
                f"{names.group(holder)} held it"
            return (f"{who} released device {names.device(node, fields['device'])} for "
                    f"{group}, but {held}")
        if kind == ReleaseProblem.FREE_COUNT:
            when = "at rest" if fields["worker"] == NONE else \
                f"after {who} released {group}'s devices"
            return (f"{when}, {names.node(node)} counts {fields['free']} free devices but "
                    f"{fields['actual']} are free")
        return (f"at rest, device {names.device(node, fields['device'])} is still held by "
                f"{group} although no pod uses it ({fields['actual']} user(s) counted)")

    def check_at_rest(self, tracker: DeviceGroupTracker) -> list[FoundViolation]:
        devices = tracker.devices
        per_node = devices.devices_per_node
        found = []
        for slot in np.flatnonzero(devices.owner.np != NONE):
            group = int(devices.owner.np[slot])
            found.append(self._found(ReleaseProblem.LEAKED, int(slot) // per_node,
                                     device=int(slot) % per_node, group=group,
                                     actual=int(devices.group_users.np[group]),
                                     since=int(devices.group_since.np[group])))
        for node, free in enumerate(devices.free.np):
            if free != per_node:
                found.append(self._found(ReleaseProblem.FREE_COUNT, node, free=int(free),
                                         actual=per_node))
        return found

    def _found(self, kind: ReleaseProblem, node: int, device: int = NONE, group: int = NONE,
               free: int = NONE, actual: int = NONE, since: int = NONE) -> FoundViolation:
        return FoundViolation(self.name, {
            "kind": kind, "node": node, "device": device, "group": group, "holder": NONE,
            "free": free, "actual": actual, "worker": NONE, "since": since,
        })
