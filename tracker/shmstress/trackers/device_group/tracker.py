"""The device group tracker: a shared-device-group plugin's device tracker, per variant."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Invariant, Parameter, RoleSpec, Setup, Tracker, Words
from shmstress.trackers.device_group.api_server import ApiServer
from shmstress.trackers.device_group.device_tracker import DeviceTracker
from shmstress.trackers.device_group.invariants import INVARIANTS
from shmstress.trackers.device_group.names import Naming
from shmstress.trackers.device_group.plugin import SharedDeviceGroupPlugin
from shmstress.trackers.device_group.roles.binder import Binder
from shmstress.trackers.device_group.roles.kubelet import Kubelet
from shmstress.trackers.device_group.roles.scheduler import Scheduler
from shmstress.trackers.device_group.variants import VARIANTS
from shmstress.trackers.device_group.words import DeviceGroupWords

_MAX_DEVICES_PER_NODE = 62  # a group's devices are a bitmask in one int64


class DeviceGroupTracker(Tracker):
    """Shared device groups: PreBind claims a node's devices for a group; Unreserve rolls back."""

    name: ClassVar[str] = "device-group"
    summary: ClassVar[str] = (
        "shared device group scheduler plugin: concurrent PreBinds select then allocate "
        "devices on a node, bind the group to it, and Unreserve rolls back"
    )
    variants: ClassVar[Mapping[str, str]] = {name: text for name, (_, text) in VARIANTS.items()}
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "scheduler": RoleSpec(
            Scheduler, "scheduling cycle: pick a pending pod, Filter a node, hand it to a binder"),
        "binder": RoleSpec(
            Binder, "binding cycle: PreBind claims the group's devices, Bind may fail into "
            "Unreserve", count=2, stops_after=("scheduler",)),
        "kubelet": RoleSpec(
            Kubelet, "running pods finish after a hold and leave their group",
            stops_after=("binder",)),
    }
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "nodes": Parameter(2, "nodes in shared device mode", minimum=1),
        "devices-per-node": Parameter(4, "devices of each node", minimum=1,
                                      maximum=_MAX_DEVICES_PER_NODE),
        "groups": Parameter(3, "shared device groups", minimum=1),
        "devices-per-group": Parameter(2, "devices a group needs on its node", minimum=1),
        "pods-per-group": Parameter(2, "pods sharing each group's devices", minimum=1),
        "hold-steps": Parameter(3, "kubelet steps a pod runs before it finishes"),
        "api-error-percent": Parameter(
            5, "chance in percent that storing the device annotation fails", maximum=100
        ),
        "bind-error-percent": Parameter(
            10, "chance in percent that Bind fails after PreBind (Unreserve)", maximum=100
        ),
    }
    invariants: ClassVar[tuple[Invariant, ...]] = INVARIANTS

    @classmethod
    def param_problems(cls, params: Mapping[str, int]) -> list[str]:
        if params["devices-per-group"] > params["devices-per-node"]:
            return [f"--param devices-per-group ({params['devices-per-group']}) must be <= "
                    f"devices-per-node ({params['devices-per-node']})"]
        return []

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        runtime = setup.runtime
        self.runtime = runtime
        self.pods = params["groups"] * params["pods-per-group"]
        self.hold_steps = params["hold-steps"]
        self.bind_error_percent = params["bind-error-percent"]
        self.naming = Naming(params["pods-per-group"])
        self.scheduling_lock = setup.lock("scheduling cycle")
        self.api = ApiServer(setup, setup.lock("api server"), self.pods)
        self.devices = DeviceTracker(
            runtime, setup, setup.lock("device tracker"), params["nodes"],
            params["devices-per-node"], params["groups"],
        )
        self.plugin = SharedDeviceGroupPlugin(
            runtime, self.api, self.devices, self.naming, VARIANTS[variant][0],
            params["devices-per-group"], params["api-error-percent"],
        )

    @classmethod
    def words(cls, params: Mapping[str, int]) -> Words:
        """The plugin's messages and device, group and pod names for logs and explanations."""
        return DeviceGroupWords(Naming(params["pods-per-group"]), params["devices-per-node"])

    def drained(self) -> bool:
        return self.api.all_pending()
