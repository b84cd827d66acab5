"""The SharedDeviceGroup plugin's extension points: Filter, PreBind, Unreserve, and pod exit.

The intended logic of the seed plugin, without its injected bugs except
where a mutation variant puts one back. PreBind keeps the seed's order in
every variant: claim the devices, store the device annotation on the pod
(an API call, which may fail and roll the claim back), then BindGroup. The
variants differ in the claim only: the seed checks the group's binding,
selects and allocates in three calls, so the group becomes visible to other
PreBinds only at BindGroup, after the API call (a yield: time passes there,
the seed's widest window); the atomic claim does all three in one critical
section and holds the devices for the node at once.
"""

from __future__ import annotations

import os
import random

from shmstress.api import Runtime
from shmstress.trackers.device_group.api_server import ApiServer
from shmstress.trackers.device_group.device_tracker import DeviceTracker, Outcome
from shmstress.trackers.device_group.names import NO_ID, Naming
from shmstress.trackers.device_group.variants import Traits


class SharedDeviceGroupPlugin:
    def __init__(
        self, runtime: Runtime, api: ApiServer, devices: DeviceTracker, naming: Naming,
        traits: Traits, devices_per_group: int, api_error_percent: int,
    ) -> None:
        self._runtime = runtime
        self.api = api
        self.devices = devices
        self.naming = naming
        self.traits = traits
        self.devices_per_group = devices_per_group
        self.api_error_percent = api_error_percent

    def filter(self, pod: int, rng: random.Random) -> int:
        """A node the pod fits on: its group's node if bound, else one with enough free devices."""
        _, bound = self.devices.group_devices(self.naming.group_of(pod))
        if bound != NO_ID:
            return bound
        fits = [n for n, free in enumerate(self.devices.available())
                if free >= self.devices_per_group]
        return fits[rng.randrange(len(fits))] if fits else NO_ID

    def pre_bind(self, pod: int, node: int, rng: random.Random) -> bool:
        group = self.naming.group_of(pod)
        outcome, mask, since = self._claim(group, node)
        if outcome in (Outcome.ELSEWHERE, Outcome.NO_DEVICES):
            return False
        if not self._store_device_allocation(pod, mask, rng):
            if outcome is Outcome.ALLOCATED and not self.traits.atomic_prebind:
                self.devices.undo_allocation(node, mask, group)
            else:
                self.devices.leave_group(group, self.traits.padded_release)
            return False
        if outcome is Outcome.ALLOCATED:
            self.devices.bind_group(group, node, mask, since)
            self._runtime.log("PreBind: Allocated NEW devices for group", group=group,
                              node=node, devices=mask)
        return True

    def _claim(self, group: int, node: int) -> tuple[Outcome, int, int]:
        """(outcome, device mask, where this PreBind began) of claiming the group's devices."""
        devices = self.devices
        if self.traits.atomic_prebind:
            return devices.claim_group(group, node, self.devices_per_group)
        found, mask, since = devices.join_bound(group, node)
        if found is not None:
            return found, mask, since
        self._runtime.log("Group not yet bound, allocating new devices on node", group=group,
                          node=node)
        mask = devices.select_devices(node, self.devices_per_group)
        if not mask:
            return Outcome.NO_DEVICES, 0, since
        devices.allocate_devices(node, mask, group, since)
        return Outcome.ALLOCATED, mask, since

    def _store_device_allocation(self, pod: int, mask: int, rng: random.Random) -> bool:
        if rng.random() * 100 < self.api_error_percent:
            self._runtime.point("Failed to patch pod annotations", pod=pod)
            return False
        self.api.store_device_allocation(pod, mask)
        os.sched_yield()  # an API call: time passes before BindGroup
        return True

    def unreserve(self, pod: int) -> None:
        """Undo PreBind for a pod that will not bind: leave its group if it had joined."""
        if self.traits.unreserve_returns_early:
            self._runtime.point("Unreserve returned before cleaning up", pod=pod)
            return
        if self.api.take_annotation(pod) != NO_ID:
            self.devices.leave_group(self.naming.group_of(pod), self.traits.padded_release)

    def pod_finished(self, pod: int) -> None:
        self.api.take_annotation(pod)
        self.devices.leave_group(self.naming.group_of(pod), self.traits.padded_release)
