"""rollback-restores-free: giving devices back restores exactly what the group took.

Checked at every release (the last user leaving, Unreserve, a failed
PreBind's rollback): each device given back was held by that group, and
the node's free count equals its devices actually free. At rest, when every
pod has gone, no device may still be held and every free count is full.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from shmstress.api import Found, Invariant, Scope, Subject, Workers
from shmstress.trackers.device_group.device_tracker import ReleaseProblem
from shmstress.trackers.device_group.invariants.common import device_subject, naming, scope
from shmstress.trackers.device_group.names import NO_ID

if TYPE_CHECKING:
    from shmstress.trackers.device_group.tracker import DeviceGroupTracker


class RollbackRestoresFree(Invariant):
    name = "rollback-restores-free"
    summary = "a release gives back exactly the group's devices; free counts stay exact"
    fields = ("kind", "node", "device", "group", "holder", "free", "actual", "worker", "since")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        names = naming(params)
        node, group = fields["node"], names.group(fields["group"])
        who = workers.describe(fields["worker"])
        kind = fields["kind"]
        if kind == ReleaseProblem.NOT_HELD:
            holder = fields["holder"]
            held = "it was already free" if holder == NO_ID else \
                f"{names.group(holder)} held it"
            return (f"{who} released device {names.device(node, fields['device'])} for "
                    f"{group}, but {held}")
        if kind == ReleaseProblem.FREE_COUNT:
            when = "at rest" if fields["worker"] == NO_ID else \
                f"after {who} released {group}'s devices"
            return (f"{when}, {names.node(node)} counts {fields['free']} free devices but "
                    f"{fields['actual']} are free")
        return (f"at rest, device {names.device(node, fields['device'])} is still held by "
                f"{group} although no pod uses it ({fields['actual']} user(s) counted)")

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        node, group = fields["node"], fields["group"]
        subjects: tuple[Subject, ...]
        if fields["device"] != NO_ID and fields["worker"] == NO_ID:
            # A device leaked at rest: the story is its group's joins and leaves (a pod
            # names its group) since the allocation that leaked (``since``), not every
            # PreBind on the node.
            subjects = (("group", group), device_subject(params, node, fields["device"]))
        else:
            subjects = (("node", node), ("group", group))
            if fields["device"] != NO_ID:
                subjects += (device_subject(params, node, fields["device"]),)
        return scope(subjects, fields)

    def check_at_rest(self, tracker: DeviceGroupTracker) -> list[Found]:
        devices = tracker.devices
        per_node = devices.devices_per_node
        found: list[Found] = []
        for slot in np.flatnonzero(devices.owner.np != NO_ID):
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

    def _found(self, kind: ReleaseProblem, node: int, device: int = NO_ID, group: int = NO_ID,
               free: int = NO_ID, actual: int = NO_ID, since: int = NO_ID) -> Found:
        return Found(self.name, {
            "kind": kind, "node": node, "device": device, "group": group, "holder": NO_ID,
            "free": free, "actual": actual, "worker": NO_ID, "since": since,
        })
