"""The plugin's in-memory device tracker: which group holds which device of which node.

Every operation is one critical section under the tracker's lock, as
upstream's tracker methods are. The lock is reentrant, so the atomic claim
runs check, select and allocate under one acquisition, while the racy
PreBind calls them one after the other. Users of a group are counted (the
pod that allocated its devices, and each pod that reuses them): the last
one to leave (a pod that finished, or Unreserve) releases the devices and
unbinds the group. ``bound`` says BindGroup ran for the group's current
allocation.

The three invariants are checked where the state changes: ``allocate``
(no device allocated while held, by another group or by another PreBind of
the same group), ``bind_group`` (one node per group) and
``release`` (a release gives back exactly what the group held, and the
free count agrees with the devices actually free). A violation raised in
a PreBind (``allocate``, ``bind_group``) carries where it began (``since``):
its explanation starts there. Those raised at a release carry none; at
rest, a leaked device carries where the PreBind that allocated it began.
"""

from __future__ import annotations

import enum

import numpy as np

from shmstress.api import Lock, Runtime, Setup
from shmstress.trackers.common import bits
from shmstress.trackers.device_group.names import NO_ID

PADDING = (0, 0, 0, 0)  # what the mutant's make([]int, 4, n) puts before the real ids


class Outcome(enum.IntEnum):
    """What PreBind's device claim came to."""

    REUSED = 0  # the group has devices on this node: share them
    ALLOCATED = 1  # the group had none: new devices allocated (BindGroup follows)
    ELSEWHERE = 2  # the group is bound to another node
    NO_DEVICES = 3  # not enough free devices on this node


class ReleaseProblem(enum.IntEnum):
    NOT_HELD = 0  # a released device was not held by the releasing group
    FREE_COUNT = 1  # after a release the free count disagrees with the free devices
    LEAKED = 2  # at rest, a device is still held although no pod uses its group


class DeviceTracker:
    def __init__(
        self, runtime: Runtime, setup: Setup, lock: Lock, nodes: int, devices_per_node: int,
        groups: int,
    ) -> None:
        self._runtime = runtime
        self.lock = lock
        self.devices_per_node = devices_per_node
        self.owner = setup.array("devices.owner", nodes * devices_per_node, NO_ID)
        self.free = setup.array("devices.free", nodes, devices_per_node)
        self.group_node = setup.array("devices.group_node", groups, NO_ID)
        self.group_mask = setup.array("devices.group_mask", groups)
        self.group_users = setup.array("devices.group_users", groups)
        self.group_bound = setup.array("devices.group_bound", groups)
        # Where the PreBind that allocated the group's current devices began: an at-rest
        # leak's explanation starts there, where the leaked allocation was made.
        self.group_since = setup.array("devices.group_since", groups, NO_ID)

    # -- reads ------------------------------------------------------------------------------
    def group_devices(self, group: int) -> tuple[int, int]:
        """(device mask, node) the group holds devices on, or (0, NO_ID)."""
        with self.lock.held("Get group devices", group=group):
            return int(self.group_mask.mv[group]), int(self.group_node.mv[group])

    def available(self) -> list[int]:
        """Free device count per node, as Filter sees it."""
        with self.lock.held("Get available resource count"):
            return [int(n) for n in self.free.np]

    # -- the steps of PreBind ---------------------------------------------------------------
    def join_bound(self, group: int, node: int) -> tuple[Outcome | None, int, int]:
        """GetGroupDevices: reuse the group's devices if it is bound to ``node``; None if the
        group is not bound (yet). Returns (outcome, device mask, where this PreBind began:
        this acquisition)."""
        with self.lock.held("Check group binding", group=group, node=node) as since:
            outcome, mask = self._join(group, node)
            return outcome, mask, since

    def _join(self, group: int, node: int) -> tuple[Outcome | None, int]:
        held_on = self.group_node.mv[group]
        if held_on == NO_ID:
            return None, 0
        if held_on != node:
            return Outcome.ELSEWHERE, 0
        self.group_users.mv[group] += 1
        return Outcome.REUSED, int(self.group_mask.mv[group])

    def select_devices(self, node: int, count: int) -> int:
        """A mask of the ``count`` lowest free devices of ``node``, or 0 if there are fewer."""
        with self.lock.held("Select devices", node=node, count=count):
            base = node * self.devices_per_node
            free = np.flatnonzero(self.owner.np[base : base + self.devices_per_node] == NO_ID)
            if free.size < count:
                return 0
            return sum(1 << int(d) for d in free[:count])

    def allocate_devices(self, node: int, mask: int, group: int, since: int) -> None:
        """Mark the devices the group's; the allocating pod is the group's first user.

        Only a free device may be allocated. One already held by the same group is a
        double allocation too: two PreBinds of the group both found it unbound and
        selected the same devices, and each allocation counts the device out of the
        node's free count, which is then short (the next release there would report the
        free count, far from this cause)."""
        with self.lock.held("Allocate devices", node=node, group=group, devices=mask):
            for device in bits(mask):
                slot = node * self.devices_per_node + device
                holder = int(self.owner.mv[slot])
                if holder != NO_ID:
                    self._runtime.violation(
                        "no-shared-device", node=node, device=device, group=group,
                        other=holder, worker=self._runtime.worker_id, since=since,
                    )
                self.owner.mv[slot] = group
                self.free.mv[node] -= 1
            self.group_users.mv[group] += 1
            self.group_since.mv[group] = since

    def undo_allocation(self, node: int, mask: int, group: int) -> None:
        """PreBind's rollback when the annotation could not be stored: ReleaseDevices."""
        with self.lock.held("Roll back devices", node=node, group=group, devices=mask):
            self.group_users.mv[group] -= 1
            self._release(node, bits(mask), group)

    def bind_group(self, group: int, node: int, mask: int, since: int) -> None:
        """BindGroup, after the annotation was stored: the group now lives on ``node``."""
        with self.lock.held("Bind group to node", group=group, node=node):
            if self.group_bound.mv[group]:
                self._runtime.violation(
                    "group-on-one-node", group=group, node=node,
                    other=int(self.group_node.mv[group]), worker=self._runtime.worker_id,
                    since=since,
                )
            self.group_node.mv[group] = node
            self.group_mask.mv[group] = mask
            self.group_bound.mv[group] = 1

    def claim_group(self, group: int, node: int, count: int) -> tuple[Outcome, int, int]:
        """The atomic claim: reuse the group's devices, or select and allocate them and hold
        them for ``node``, in one critical section. BindGroup still follows the annotation.
        Returns (outcome, device mask, where this PreBind began: this acquisition)."""
        with self.lock.held("Claim group devices", group=group, node=node) as since:
            outcome, mask = self._join(group, node)
            if outcome is not None:
                return outcome, mask, since
            mask = self.select_devices(node, count)
            if not mask:
                return Outcome.NO_DEVICES, 0, since
            self.allocate_devices(node, mask, group, since)
            self.group_node.mv[group] = node
            self.group_mask.mv[group] = mask
            return Outcome.ALLOCATED, mask, since

    # -- leaving ----------------------------------------------------------------------------
    def leave_group(self, group: int, padded: bool) -> None:
        """One user less; the last one releases the group's devices and unbinds it."""
        with self.lock.held("Leave group", group=group):
            users = self.group_users.mv[group] - 1
            self.group_users.mv[group] = users
            node = int(self.group_node.mv[group])
            if users > 0 or node == NO_ID:
                return
            ids = bits(int(self.group_mask.mv[group]))
            self._release(node, [*PADDING, *ids] if padded else ids, group)
            self.group_node.mv[group] = NO_ID
            self.group_mask.mv[group] = 0
            self.group_bound.mv[group] = 0

    def _release(self, node: int, ids: list[int], group: int) -> None:
        """Upstream's ReleaseDevices: mark each id free and count it back; the lock is held."""
        runtime = self._runtime
        runtime.point("Released devices", node=node, group=group,
                      devices=sum(1 << device for device in set(ids)))
        base = node * self.devices_per_node
        for device in ids:
            holder = self.owner.mv[base + device]
            if holder != group:
                runtime.violation(
                    "rollback-restores-free", kind=ReleaseProblem.NOT_HELD, node=node,
                    device=device, group=group, holder=holder, worker=runtime.worker_id,
                )
            self.owner.mv[base + device] = NO_ID
            self.free.mv[node] += 1
        actually_free = int(np.count_nonzero(
            self.owner.np[base : base + self.devices_per_node] == NO_ID))
        if self.free.mv[node] != actually_free:
            runtime.violation(
                "rollback-restores-free", kind=ReleaseProblem.FREE_COUNT, node=node,
                group=group, free=self.free.mv[node], actual=actually_free,
                worker=runtime.worker_id,
            )
