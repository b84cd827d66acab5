"""The DRA tracker's words: upstream's log messages and names, and a phrase per step.

Messages upstream logs keep upstream's wording and sit at verbosity 0, so a
log of this tracker reads like the scheduler's; the rest of the model's
points are chattier levels. Names follow upstream (``<driver>/<pool>/<device>``,
``<namespace>/claim-0553``). Facts for the initial state are the two the
gather reads: is the claim in flight, is its device in allocated devices;
and one a worker holds: the claim's event, popped from the assume cache's
queue and not yet delivered to allocated devices (the unordered-events race).
A gather's result is rendered as the set of device names, as upstream logs it
(a gather of more devices than one record holds records their count instead).
What each step reads and writes is declared in ``accesses``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import ClassVar

from shmstress.api import Access, Effect, Fields, Raw, Subject, Words
from shmstress.trackers.dra import accesses
from shmstress.trackers.dra.names import NO_ID, Naming
from shmstress.trackers.dra.pod_queue import PodState

IN_FLIGHT = "in flight"
OBSERVED = "in allocated devices"
UNDELIVERED = "holds the popped event of"

_VERBOSITY = {
    # upstream's own messages
    "Starting GatherAllocatedState": 0,
    "Finished GatherAllocatedState": 0,
    "Device is in flight for allocation": 0,
    "Observed device allocation": 0,
    "Claim stored in assume cache": 0,
    "Removed in-flight claim": 0,
    "Attempting to bind pod to node": 0,
    # other changes of shared state
    "Signal claim pending allocation": 1,
    "update claim status": 1,
    "informer update": 1,
    "restore claim": 1,
    "Unreserve after API error": 1,
    "conflicting concurrent modification, retrying": 1,
    # reads and hand-offs
    "Popped event": 2,
    "copy allocated devices": 2,
    "check in-flight claims": 2,
    "check revision": 2,
    "get claim": 2,
    "list claims": 2,
    "list assumed claims": 2,
    "get assumed claim": 2,
    "check pending allocation": 2,
    "hand pod to binder": 2,
    "take pod to bind": 2,
    "pod state": 2,
}
_PLUMBING = 3  # scheduling-loop lock, event queue, watch polling, bare lock acquires

_STEPS = {
    "Starting GatherAllocatedState": "starts GatherAllocatedState",
    "copy allocated devices": "copies allocated devices",
    "check in-flight claims": "checks in-flight claims",
    "check revision": "checks the revision",
    "conflicting concurrent modification, retrying": "retries after a concurrent modification",
    "Signal claim pending allocation": "puts the claim in flight",
    "Removed in-flight claim": "removes the claim from in-flight",
    "Claim stored in assume cache": "stores the claim in the assume cache",
    "restore claim": "restores the claim in the assume cache",
    "Unreserve after API error": "unreserves the claim after an API error",
    "Popped event": "pops the claim's event",
}


class DraWords(Words):
    logger = "scheduler"
    verbosities: ClassVar[Mapping[str, int]] = _VERBOSITY
    default_verbosity: ClassVar[int] = _PLUMBING
    facts = (IN_FLIGHT, OBSERVED)
    holdings = (UNDELIVERED,)
    kinds: ClassVar[Mapping[str, str]] = {"previous": "device", "old": "device"}
    related: ClassVar[Mapping[str, tuple[str, ...]]] = {"claim": ("pod",)}

    def __init__(self, naming: Naming) -> None:
        self._names = naming
        device = naming.device  # NO_ID reads "<none>"
        self._namers: Mapping[str, Callable[[int], object]] = {
            "claim": lambda claim: "<none>" if claim == NO_ID else naming.claim(claim),
            "pod": lambda pod: "<none>" if pod == NO_ID else naming.pod(pod),
            "device": device, "old": device, "previous": device,  # previous: an event's old
            "resourceVersion": str,  # a string in Kubernetes, quoted in upstream's logs
            "state": lambda state: PodState(state).name.lower(),
        }

    def event(self, label: str, fields: Fields) -> tuple[str, Fields]:
        values = dict(fields)
        if label == "Observed device allocation":
            new, old = values.get("device", NO_ID), values.get("old", NO_ID)
            claim = values.get("claim", NO_ID)
            if new == NO_ID:
                label, fields = "Observed device deallocation", (("device", old), ("claim", claim))
            else:
                fields = (("device", new), ("claim", claim))
                if old != NO_ID:
                    fields += (("previous", old),)
        elif label == "Attempting to bind pod to node":
            device = values.get("device", NO_ID)
            node = self._names.node(device) if isinstance(device, int) else str(device)
            fields = (("pod", values.get("pod", NO_ID)), ("node", node))
        elif label == "Claim stored in assume cache" and "claim" in values:
            fields = (("pod", values["claim"]), *fields)
        elif label == "Finished GatherAllocatedState":
            devices = values.get("allocatedDevices")
            if isinstance(devices, tuple):  # a set of device ids, shown as upstream logs it
                names = [self._names.device(device) for device in devices]
                return label, (("allocatedDevices", Raw(json.dumps(names, indent=2))),)
        return super().event(label, fields)

    def field_namer(self, key: str) -> Callable[[int], object] | None:
        return self._namers.get(key)

    def step(self, label: str, fields: Mapping[str, object]) -> str | None:
        if label == "Popped event" and fields.get("device") == fields.get("old"):
            return None  # an event that changes nothing: the handler drops it
        if label == "Observed device allocation":
            if "device" not in fields:  # known from the schedule tape only
                return "delivers an event to allocated devices"
            if fields["device"] == NO_ID:
                return "removes the device from allocated devices"
            return "adds the device to allocated devices"
        return _STEPS.get(label)

    def subjects(self, label: str, fields: Mapping[str, object]) -> tuple[Subject, ...]:
        found: list[Subject] = []
        for key, value in fields.items():
            if not isinstance(value, int) or value == NO_ID:
                continue
            if key in ("claim", "pod"):
                found.append(("claim", value))
            elif key in ("device", "old"):
                found.append(("device", value))
        return tuple(found)

    def effects(self, label: str, fields: Mapping[str, object]) -> tuple[Effect, ...]:
        claim = fields.get("claim")
        if label == "Signal claim pending allocation" and isinstance(claim, int):
            return (Effect(("claim", claim), IN_FLIGHT, True),)
        if label == "Removed in-flight claim" and isinstance(claim, int):
            return (Effect(("claim", claim), IN_FLIGHT, False),)
        if label == "Popped event" and isinstance(claim, int):
            # An event that changes nothing is dropped by the handler: nothing to deliver.
            changes = fields.get("device") != fields.get("old")
            return (Effect(("claim", claim), UNDELIVERED, True),) if changes else ()
        if label == "Observed device allocation":
            new, old = fields.get("device", NO_ID), fields.get("old", NO_ID)
            effects = []
            if isinstance(claim, int):
                effects.append(Effect(("claim", claim), UNDELIVERED, False))
            if isinstance(old, int) and old != NO_ID:
                effects.append(Effect(("device", old), OBSERVED, False))
            if isinstance(new, int) and new != NO_ID:
                effects.append(Effect(("device", new), OBSERVED, True))
            return tuple(effects)
        return ()

    def accesses(self, label: str, fields: Mapping[str, object]) -> tuple[Access, ...] | None:
        """What the step after each point touches (``dra.accesses``), for partial-order
        reduction."""
        return accesses.accesses(label, fields)

    def initial_facts(self, subject: Subject) -> Mapping[str, bool]:
        # Every claim starts out of flight and every device free (see tracker.dra.tracker).
        return {"claim": {IN_FLIGHT: False}, "device": {OBSERVED: False}}.get(subject[0], {})

    def parameters_for(self, objects: Mapping[str, int]) -> Mapping[str, int]:
        """One device per claim and pod the log names, and one more, for the claim a
        scheduling cycle is gathering for (it is in flight only after its gather)."""
        nodes = max(1, objects.get("node", 1))
        needed = max(objects.get(kind, 0) for kind in ("device", "claim", "pod", "node")) + 1
        return {"nodes": nodes, "devices-per-node": -(-needed // nodes)}

    def name(self, subject: Subject) -> str:
        kind, ident = subject
        if kind == "claim":
            return f'claim "{self._names.claim(ident)}"'
        if kind == "device":
            return f'device "{self._names.device(ident)}"'
        return super().name(subject)
