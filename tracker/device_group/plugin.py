"""The SharedDeviceGroup plugin's extension points: Filter, PreBind, Unreserve, and pod exit.

The intended logic of the seed plugin, without its injected bugs except
where a mutation variant puts one back. PreBind claims the group's devices
either atomically (one tracker call) or as upstream writes it: check the
binding, select, allocate, bind, each a call of its own.
"""

from __future__ import annotations

import random

from harness.runtime import Runtime
from tracker.device_group.api_server import ApiServer
from tracker.device_group.device_tracker import DeviceTracker, Outcome
from tracker.device_group.names import NONE, Naming
from tracker.device_group.variants import Traits


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
        if bound != NONE:
            return bound
        fits = [n for n, free in enumerate(self.devices.available())
                if free >= self.devices_per_group]
        return fits[rng.randrange(len(fits))] if fits else NONE

    def pre_bind(self, pod: int, node: int, rng: random.Random) -> bool:
        group = self.naming.group_of(pod)
        if self.traits.atomic_prebind:
            outcome, mask = self.devices.claim_group(group, node, self.devices_per_group)
        else:
            outcome, mask = self._claim_step_by_step(group, node)
        if outcome in (Outcome.ELSEWHERE, Outcome.NO_DEVICES):
            return False
        if rng.random() * 100 < self.api_error_percent:
            self._runtime.point("Failed to patch pod annotations", pod=pod)
            self.devices.leave_group(group, self.traits.padded_release)
            return False
        self.api.store_device_allocation(pod, mask)
        return True

    def _claim_step_by_step(self, group: int, node: int) -> tuple[Outcome, int]:
        outcome, mask = self.devices.join_bound(group, node)
        if outcome is not None:
            return outcome, mask
        mask = self.devices.select_devices(node, self.devices_per_group)
        if not mask:
            return Outcome.NO_DEVICES, 0
        self.devices.allocate_devices(node, mask, group)
        self.devices.bind_group(group, node, mask)
        return Outcome.ALLOCATED, mask

    def unreserve(self, pod: int) -> None:
        """Undo PreBind for a pod that will not bind: leave its group if it had joined."""
        if self.traits.unreserve_returns_early:
            self._runtime.point("Unreserve returned before cleaning up", pod=pod)
            return
        if self.api.take_annotation(pod) != NONE:
            self.devices.leave_group(self.naming.group_of(pod), self.traits.padded_release)

    def pod_finished(self, pod: int) -> None:
        self.api.take_annotation(pod)
        self.devices.leave_group(self.naming.group_of(pod), self.traits.padded_release)
