"""The device group tracker's invariants, one module each."""

from shmstress.trackers.device_group.invariants.group_on_one_node import GroupOnOneNode
from shmstress.trackers.device_group.invariants.no_shared_device import NoSharedDevice
from shmstress.trackers.device_group.invariants.rollback_restores_free import RollbackRestoresFree

INVARIANTS = (NoSharedDevice(), GroupOnOneNode(), RollbackRestoresFree())

__all__ = ["INVARIANTS", "GroupOnOneNode", "NoSharedDevice", "RollbackRestoresFree"]
