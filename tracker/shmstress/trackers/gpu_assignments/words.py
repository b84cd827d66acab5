"""The GPU assignments tracker's words: the device plugin's log messages, pod names, steps.

Messages the seed's resource manager logs keep its wording at verbosity 0;
the model's other points are chattier. A pod is one subject per slot (each
invariant's scope names it with the incarnation its violation is about). The
initial state says whether that pod was pending and whether the assignments
held an entry for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Effect, Fields, Subject, Words
from shmstress.trackers.gpu_assignments import names
from shmstress.trackers.gpu_assignments.names import NO_ID

PENDING = "pending"
ASSIGNED = "in assignments"

_VERBOSITY = {
    # the seed's own messages
    "Running cleanup": 0,
    "Removing from assignments": 0,
    "Cleanup done": 0,
    "Selected devices for container": 0,
    "Couldn't find allocation info from assignments": 0,
    # the cluster around it
    "Created pod": 1,
    "Deleted pod": 1,
    "Removed pod": 1,
    "Pod started": 1,
    "Kubelet calls Allocate": 1,
    # reads and writes of the structures
    "Storing container assignment": 2,
    "Looking up container assignment": 2,
    "List pods on node": 1,  # the racing step of list-before-lock
    "List pending pods on node": 2,
}
_PLUMBING = 3  # the cleanup mutex, a controller visit that changed nothing

_STEPS = {
    "Running cleanup": "starts a cleanup pass",
    "Cleanup takes the mutex": "takes the cleanup mutex",
    "Removing from assignments": "removes the pod's assignment",
    "Created pod": "creates the pod",
    "Deleted pod": "deletes the pod",
    "Removed pod": "removes the deleted pod",
    "Selected devices for container": "GetPreferredAllocation picks a card for the pod",
    "Storing container assignment": "stores the pod's assignment",
    "Kubelet calls Allocate": "calls Allocate",
    "Looking up container assignment": "looks the assignment up",
    "Couldn't find allocation info from assignments": "finds none",
    "Pod started": "starts the pod",
}

_FACTS: dict[str, tuple[str, bool]] = {
    "Created pod": (PENDING, True),
    "Pod started": (PENDING, False),
    "Storing container assignment": (ASSIGNED, True),
    "Removing from assignments": (ASSIGNED, False),
}


class GpuWords(Words):
    logger = "gpu-plugin"
    verbosities: ClassVar[Mapping[str, int]] = _VERBOSITY
    default_verbosity: ClassVar[int] = _PLUMBING
    facts = (PENDING, ASSIGNED)

    def event(self, label: str, fields: Fields) -> tuple[str, Fields]:
        values = dict(fields)
        slot, generation = values.pop("pod", None), values.pop("generation", None)
        shown: list[tuple[str, object]] = []
        if isinstance(slot, int) and isinstance(generation, int):
            shown.append(("pod", names.pod(slot, generation)))
        card = values.pop("card", None)
        if isinstance(card, int):
            shown.append(("card", names.card(card)))
        return label, (*shown, *values.items())

    def step(self, label: str, fields: Mapping[str, object]) -> str | None:
        if label == "List pods on node":
            *others, last = str(fields.get("phase", "")).split(",")
            listed = f"{', '.join(others)} and {last}" if others else last
            return f"lists {listed} pods" if listed else "lists pods"
        return _STEPS.get(label)

    def subjects(self, label: str, fields: Mapping[str, object]) -> tuple[Subject, ...]:
        slot = fields.get("pod")
        return (("pod", slot),) if isinstance(slot, int) and slot != NO_ID else ()

    def effects(self, label: str, fields: Mapping[str, object]) -> tuple[Effect, ...]:
        fact = _FACTS.get(label)
        slot = fields.get("pod")
        if fact is None or not isinstance(slot, int):
            return ()
        return (Effect(("pod", slot), *fact),)

    def initial_facts(self, subject: Subject) -> Mapping[str, bool]:
        # Every slot starts without a pod and without an assignment (tracker.gpu_assignments).
        return {PENDING: False, ASSIGNED: False} if subject[0] == "pod" else {}

    def name(self, subject: Subject) -> str:
        return f"pod slot {subject[1]}" if subject[0] == "pod" else super().name(subject)
