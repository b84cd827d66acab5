"""The device group tracker's words: the plugin's messages, device and group names, steps.

The seed's plugin logs PreBind's decisions and the stored annotation; its
device tracker's calls (GetGroupDevices, SelectDevices, AllocateDevices,
BindGroup, ReleaseDevices) are the steps of the race, at verbosity 0. A
device is one subject per (node, device), numbered node-major; a pod also
names its group, so every step of a group's PreBinds is about the group.
The initial state says which devices were allocated and whether the group
was bound.

What a point's step reads and writes (``accesses``) is said in the same
objects: a ``device`` (its holder), a node's ``free`` count, a ``group``'s
binding (node, devices, bound) and its ``group users``, a ``pod``'s state and
its device ``annotation``; a scan of every pod or every free count reads ``EVERY`` one.
The invariants' checks (a device's holder when it is allocated or released)
are not steps of the system: not declared.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar, TypeGuard

from shmstress.api import EVERY, Access, Effect, Fields, Subject, Words
from shmstress.trackers.common import bits
from shmstress.trackers.device_group.api_server import PodState
from shmstress.trackers.device_group.names import NO_ID, Naming

ALLOCATED = "allocated"
BOUND = "bound"

_VERBOSITY = {
    "Check group binding": 0,
    "Select devices": 0,
    "Allocate devices": 0,
    "Claim group devices": 0,
    "Stored device allocation": 0,
    "Failed to patch pod annotations": 0,
    "Bind group to node": 0,
    "Released devices": 0,
    "Roll back devices": 0,
    "Unreserve returned before cleaning up": 0,
    "Pod scheduled to node": 1,
    "Binding rejected": 1,
    "Leave group": 1,
    "Pod state": 1,
    "Get group devices": 2,
    "Get available resource count": 2,
    "Read and clear device annotation": 2,
}
_PLUMBING = 3  # the scheduling loop, queues, polling for running pods

_STEPS = {  # filled with the names of the record's fields ("the group" when unknown)
    "Check group binding": "checks {group}'s binding (GetGroupDevices)",
    "Select devices": "selects free devices on {node} (SelectDevices)",
    "Allocate devices": "allocates {devices} to {group} (AllocateDevices)",
    "Claim group devices": "claims devices on {node} for {group} in one critical section",
    "Stored device allocation": "stores the device annotation on {pod}",
    "Failed to patch pod annotations": "fails to store the device annotation on {pod}",
    "Bind group to node": "binds {group} to {node} (BindGroup)",
    "Released devices": "releases {devices} of {group}",
    "Roll back devices": "rolls back {group}'s allocation",
    "Leave group": "leaves {group}",
    "Get group devices": "Filter reads {group}'s node",
    "Pod scheduled to node": "schedules {pod} to {node}",
    "Binding rejected": "Bind of {pod} fails",
    "Unreserve returned before cleaning up": "Unreserve of {pod} returns before cleaning up",
}


_SCANS: dict[str, tuple[Access, ...]] = {
    "Start scheduling cycle": (),  # the scheduling lock: the pending list is the next point
    "List pending pods": (Access("pod", EVERY, False),),
    "Take pod to bind": (Access("pod", EVERY, False), Access("pod", EVERY, True)),
    "Pod runs": (Access("pod", EVERY, False), Access("pod", EVERY, True)),
    "Count pods": (Access("pod", EVERY, False),),
    "Get available resource count": (Access("free", EVERY, False),),
}


def _binding(group: int, write: bool) -> Access:
    """The group's binding: its node, its devices, whether BindGroup ran."""
    return Access("group", group, write)


def _users(group: int) -> Access:
    """The group's user count: only ever counted up or down (a read-modify-write: a write)."""
    return Access("group users", group, True)


class _Named(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return f"the {key}"


class DeviceGroupWords(Words):
    logger = "shared-device-group"
    verbosities: ClassVar[Mapping[str, int]] = _VERBOSITY
    default_verbosity: ClassVar[int] = _PLUMBING
    facts = (ALLOCATED, BOUND)

    def __init__(self, naming: Naming, devices_per_node: int) -> None:
        self._names = naming
        self._per_node = devices_per_node
        self._namers: Mapping[str, Callable[[int], object]] = {
            "node": naming.node, "group": naming.group, "pod": naming.pod,
            "state": lambda state: PodState(state).name.lower(),
        }

    def field_namer(self, key: str) -> Callable[[int], object] | None:
        return self._namers.get(key)

    def event(self, label: str, fields: Fields) -> tuple[str, Fields]:
        """A ``devices`` mask reads as its devices' names, which need the record's ``node``;
        every other field goes through ``field_namer``."""
        node = dict(fields).get("node")
        if isinstance(node, int):
            fields = tuple(
                (key, self._device_names(node, value)) if key == "devices" and _is_int(value)
                else (key, value)
                for key, value in fields
            )
        return super().event(label, fields)

    def _device_names(self, node: int, mask: int) -> list[str]:
        return [self._names.device(node, device) for device in bits(mask)]

    def step(self, label: str, fields: Mapping[str, object]) -> str | None:
        if label == "Pod state":
            return "binds {pod}".format_map(self._named(fields)) \
                if fields.get("state") == PodState.RUNNING else None
        template = _STEPS.get(label)
        return None if template is None else template.format_map(self._named(fields))

    def _named(self, fields: Mapping[str, object]) -> _Named:
        """The record's objects by the names its log line gives them, for a step's template."""
        named = _Named()
        for key, value in fields.items():
            namer = self.field_namer(key)
            if namer is not None and _is_int(value):
                named[key] = str(namer(value))
        node, mask = fields.get("node"), fields.get("devices")
        if isinstance(node, int) and isinstance(mask, int):
            named["devices"] = "devices " + ", ".join(self._device_names(node, mask))
        return named

    def subjects(self, label: str, fields: Mapping[str, object]) -> tuple[Subject, ...]:
        found: list[Subject] = []
        node = fields.get("node")
        for key, value in fields.items():
            if not isinstance(value, int) or isinstance(value, bool) or value == NO_ID:
                continue
            if key == "node":
                found.append(("node", value))
            elif key == "group":
                found.append(("group", value))
            elif key == "pod":
                found += [("pod", value), ("group", self._names.group_of(value))]
            elif key == "devices" and isinstance(node, int):
                found += [("device", node * self._per_node + d) for d in bits(value)]
        return tuple(found)

    def effects(self, label: str, fields: Mapping[str, object]) -> tuple[Effect, ...]:
        node, group, mask = fields.get("node"), fields.get("group"), fields.get("devices")
        if not (isinstance(node, int) and isinstance(group, int)):
            return ()
        if label == "Bind group to node":
            return (Effect(("group", group), BOUND, True),)
        if label not in ("Allocate devices", "Released devices", "Roll back devices") or \
                not isinstance(mask, int):
            return ()
        allocated = label == "Allocate devices"
        found = [Effect(("device", node * self._per_node + d), ALLOCATED, allocated)
                 for d in bits(mask)]
        if label == "Released devices":
            found.append(Effect(("group", group), BOUND, False))
        return tuple(found)

    def accesses(self, label: str, fields: Mapping[str, object]) -> tuple[Access, ...] | None:
        if label in _SCANS:
            return _SCANS[label]
        pod, group, node = fields.get("pod"), fields.get("group"), fields.get("node")
        if _is_int(pod):
            return self._on_pod(label, pod)
        if not _is_int(node):
            if not _is_int(group):
                return None
            return {"Leave group": (_binding(group, False), _users(group)),
                    "Get group devices": (_binding(group, False),)}.get(label)
        on_node = [node * self._per_node + d for d in range(self._per_node)]
        mask = fields.get("devices")
        chosen = ([node * self._per_node + d for d in bits(mask)] if _is_int(mask)
                  else on_node)
        free = Access("free", node, True)
        if label == "Select devices":
            return tuple(Access("device", d, False) for d in on_node)
        if not _is_int(group):
            return None
        if label == "Check group binding":  # a user more if it reuses the group's devices
            return _binding(group, False), _users(group)
        if label == "Bind group to node":
            return (_binding(group, True),)
        if label == "Roll back devices":  # one user less; the release is a point of its own
            return (_users(group),)
        devices = tuple(Access("device", d, True) for d in chosen)
        if label == "Allocate devices":
            return (*devices, free, _users(group))
        if label == "Released devices":  # the last user's release unbinds the group
            return (*devices, free, _binding(group, True))
        if label == "Claim group devices":  # the atomic check, select, allocate and hold
            return (_binding(group, False), *(Access("device", d, False) for d in on_node),
                    *devices, free, _binding(group, True), _users(group))
        return None

    @staticmethod
    def _on_pod(label: str, pod: int) -> tuple[Access, ...] | None:
        if label in ("Pod scheduled to node", "Pod state"):
            return (Access("pod", pod, True),)
        if label == "Stored device allocation":
            return (Access("annotation", pod, True),)
        if label == "Read and clear device annotation":
            return (Access("annotation", pod, False), Access("annotation", pod, True))
        if label in ("Failed to patch pod annotations", "Binding rejected",
                     "Unreserve returned before cleaning up"):
            return ()  # a decision: what it leads to is the next point's
        return None

    def initial_facts(self, subject: Subject) -> Mapping[str, bool]:
        # Every device starts free and every group unbound (tracker.device_group).
        return {"device": {ALLOCATED: False}, "group": {BOUND: False}}.get(subject[0], {})

    def name(self, subject: Subject) -> str:
        kind, ident = subject
        if kind == "device":
            node, device = divmod(ident, self._per_node)
            return f'device "{self._names.device(node, device)}"'
        if kind == "group":
            return f'group "{self._names.group(ident)}"'
        if kind == "node":
            return f'node "{self._names.node(ident)}"'
        if kind == "pod":
            return f'pod "{self._names.pod(ident)}"'
        return super().name(subject)


def _is_int(value: object) -> TypeGuard[int]:
    """An int field's value (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)
