"""The plugin's in-memory device tracker: which group holds which device of which node.

Every operation is one critical section under the tracker's lock, as
upstream's tracker methods are. The lock is reentrant, so the atomic
PreBind runs check, select, allocate and bind under one acquisition, while
the racy one calls them one after the other. Users of a group are counted:
the last one to leave (a pod that finished, or Unreserve) releases its
devices and unbinds it.

The three invariants are checked where the state changes: ``allocate``
(no device in two groups), ``bind_group`` (one node per group) and
``release`` (a release gives back exactly what the group held, and the
free count agrees with the devices actually free).
"""

from __future__ import annotations

import enum

import numpy as np

from harness.locks import InstrumentedLock
from harness.runtime import Runtime
from harness.shm import Arena
from tracker.device_group.names import NONE

PADDING = (0, 0, 0, 0)  # what the mutant's make([]int, 4, n) puts before the real ids


class Outcome(enum.IntEnum):
    """What PreBind's device claim came to."""

    REUSED = 0  # the group was bound to this node: share its devices
    ALLOCATED = 1  # the group was unbound: new devices allocated and bound
    ELSEWHERE = 2  # the group is bound to another node
    NO_DEVICES = 3  # not enough free devices on this node


class ReleaseProblem(enum.IntEnum):
    NOT_HELD = 0  # a released device was not held by the releasing group
    FREE_COUNT = 1  # after a release the free count disagrees with the free devices
    LEAKED = 2  # at rest, a device is still held although no pod uses its group


class DeviceTracker:
    def __init__(
        self, runtime: Runtime, arena: Arena, lock: InstrumentedLock, nodes: int,
        devices_per_node: int, groups: int,
    ) -> None:
        self._runtime = runtime
        self.lock = lock
        self.devices_per_node = devices_per_node
        self.owner = arena.array("devices.owner", nodes * devices_per_node, NONE)
        self.free = arena.array("devices.free", nodes, devices_per_node)
        self.group_node = arena.array("devices.group_node", groups, NONE)
        self.group_mask = arena.array("devices.group_mask", groups)
        self.group_users = arena.array("devices.group_users", groups)

    # -- reads ------------------------------------------------------------------------------
    def group_devices(self, group: int) -> tuple[int, int]:
        """(device mask, node) the group is bound to, or (0, NONE)."""
        with self.lock.held("Get group devices", group=group):
            return int(self.group_mask.mv[group]), int(self.group_node.mv[group])

    def available(self) -> list[int]:
        """Free device count per node, as Filter sees it."""
        with self.lock.held("Get available resource count"):
            return [int(n) for n in self.free.np]

    # -- the steps of PreBind ---------------------------------------------------------------
    def join_bound(self, group: int, node: int) -> tuple[Outcome | None, int]:
        """Share the group's devices if it is bound to ``node``; None if it is unbound."""
        with self.lock.held("Check group binding", group=group, node=node):
            bound = self.group_node.mv[group]
            if bound == NONE:
                return None, 0
            if bound != node:
                return Outcome.ELSEWHERE, 0
            self.group_users.mv[group] += 1
            return Outcome.REUSED, int(self.group_mask.mv[group])

    def select_devices(self, node: int, count: int) -> int:
        """A mask of the ``count`` lowest free devices of ``node``, or 0 if there are fewer."""
        with self.lock.held("Select devices", node=node, count=count):
            base = node * self.devices_per_node
            free = np.flatnonzero(self.owner.np[base : base + self.devices_per_node] == NONE)
            if free.size < count:
                return 0
            return sum(1 << int(d) for d in free[:count])

    def allocate_devices(self, node: int, mask: int, group: int) -> None:
        with self.lock.held("Allocate devices", node=node, group=group, devices=mask):
            for device in _bits(mask):
                slot = node * self.devices_per_node + device
                holder = self.owner.mv[slot]
                if holder not in (NONE, group):
                    self._runtime.violation(
                        "no-shared-device", node=node, device=device, group=group,
                        other=holder, worker=self._runtime.worker_id,
                    )
                self.owner.mv[slot] = group
                self.free.mv[node] -= 1

    def bind_group(self, group: int, node: int, mask: int) -> None:
        with self.lock.held("Bind group to node", group=group, node=node):
            bound = self.group_node.mv[group]
            if bound != NONE:
                self._runtime.violation(
                    "group-on-one-node", group=group, node=node, other=bound,
                    worker=self._runtime.worker_id,
                )
            self.group_node.mv[group] = node
            self.group_mask.mv[group] = mask
            self.group_users.mv[group] = 1

    def claim_group(self, group: int, node: int, count: int) -> tuple[Outcome, int]:
        """The atomic PreBind: join a bound group, or select, allocate and bind, in one go."""
        with self.lock.held("Claim group devices", group=group, node=node):
            outcome, mask = self.join_bound(group, node)
            if outcome is not None:
                return outcome, mask
            mask = self.select_devices(node, count)
            if not mask:
                return Outcome.NO_DEVICES, 0
            self.allocate_devices(node, mask, group)
            self.bind_group(group, node, mask)
            return Outcome.ALLOCATED, mask

    # -- leaving ----------------------------------------------------------------------------
    def leave_group(self, group: int, padded: bool) -> None:
        """One user less; the last one releases the group's devices and unbinds it."""
        with self.lock.held("Leave group", group=group):
            users = self.group_users.mv[group] - 1
            self.group_users.mv[group] = users
            node = int(self.group_node.mv[group])
            if users > 0 or node == NONE:
                return
            ids = list(_bits(int(self.group_mask.mv[group])))
            self._release(node, [*PADDING, *ids] if padded else ids, group)
            self.group_node.mv[group] = NONE
            self.group_mask.mv[group] = 0

    def _release(self, node: int, ids: list[int], group: int) -> None:
        """Upstream's ReleaseDevices: mark each id free and count it back; the lock is held."""
        runtime = self._runtime
        runtime.point("Released devices", node=node, group=group, count=len(ids))
        base = node * self.devices_per_node
        for device in ids:
            holder = self.owner.mv[base + device]
            if holder != group:
                runtime.violation(
                    "rollback-restores-free", kind=ReleaseProblem.NOT_HELD, node=node,
                    device=device, group=group, holder=holder, worker=runtime.worker_id,
                )
            self.owner.mv[base + device] = NONE
            self.free.mv[node] += 1
        actually_free = int(np.count_nonzero(
            self.owner.np[base : base + self.devices_per_node] == NONE))
        if self.free.mv[node] != actually_free:
            runtime.violation(
                "rollback-restores-free", kind=ReleaseProblem.FREE_COUNT, node=node,
                group=group, free=self.free.mv[node], actual=actually_free,
                worker=runtime.worker_id,
            )


def _bits(mask: int) -> list[int]:
    return [bit for bit in range(mask.bit_length()) if mask >> bit & 1]
