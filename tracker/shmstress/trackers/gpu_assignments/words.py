"""The GPU assignments tracker's words: the device plugin's log messages, pod names, steps.

Messages the seed's resource manager logs keep its wording at verbosity 0;
the model's other points are chattier. A pod is one subject per slot (each
invariant's scope names it with the incarnation its violation is about). The
initial state says whether that pod was pending and whether the assignments
held an entry for it.

What each point's step reads and writes (``accesses``) names five kinds of
object per pod slot: its ``pod`` (phase and incarnation, what lists read), its
``assignment``, the kubelet's ``admission`` mark, the controller's ``pod age``
and the ``cleanups`` it went through; plus the cleanup's ``pass`` counter. A
list or a scan is a read of ``EVERY`` slot. The words do not know the variant:
the prune's scan is declared where the racy variants make it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import EVERY, Access, Effect, Fields, Subject, Words
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


def _every(kind: str, write: bool = False) -> Access:
    return Access(kind, EVERY, write)


_SCAN_ASSIGNMENTS = (_every("assignment"),)  # the prune's look for entries of unlisted pods

# label -> what the step after the point touches, for a point naming no pod (the pod's are
# in ``GpuWords.accesses``)
_ACCESSES: dict[str, tuple[Access, ...]] = {
    # the kubelet takes the oldest pending pod no kubelet took yet and marks it its own
    "List pending pods on node": (_every("pod"), _every("admission"),
                                  _every("admission", write=True)),
    "Running cleanup": (),
    # the prune's scan (the fix makes it one point later, after its list, still holding the
    # mutex every writer of the assignments takes: ordered against them by the mutex alone)
    "Cleanup takes the mutex": _SCAN_ASSIGNMENTS,
    "List pods on node": (_every("pod"), Access("pass", 0, True)),  # a pass begins with it
    # counts the pass for deleted pods, then looks for their assignments
    "Cleanup done": (_every("pod"), Access("pass", 0, False), _every("cleanups", write=True),
                     *_SCAN_ASSIGNMENTS),
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

    def accesses(self, label: str, fields: Mapping[str, object]) -> tuple[Access, ...] | None:
        slot = fields.get("pod", fields.get("slot"))
        if not isinstance(slot, int):
            return _ACCESSES.get(label)
        if label in ("Storing container assignment", "Removing from assignments"):
            return (Access("assignment", slot, True),)
        if label == "Looking up container assignment":
            return (Access("assignment", slot, False),)
        if label == "Pod started":
            return (Access("pod", slot, True), Access("pod age", slot, True))
        if label == "Sync pod":  # what the visit reads; each change is a point of its own
            return (Access("pod", slot, False), Access("cleanups", slot, False),
                    Access("pod age", slot, True))
        if label == "Created pod":  # a new incarnation: not admitted, no cleanups seen
            return (Access("pod", slot, True), Access("admission", slot, True),
                    Access("cleanups", slot, True))
        if label == "Removed pod":
            return (Access("pod", slot, True),)
        if label == "Deleted pod":
            return (Access("pod", slot, True), Access("pass", 0, False))
        if label in ("Selected devices for container", "Kubelet calls Allocate",
                     "Couldn't find allocation info from assignments"):
            return ()  # the next point is the lock that guards what comes after it
        return None

    def initial_facts(self, subject: Subject) -> Mapping[str, bool]:
        # Every slot starts without a pod and without an assignment (tracker.gpu_assignments).
        return {PENDING: False, ASSIGNED: False} if subject[0] == "pod" else {}

    def name(self, subject: Subject) -> str:
        return f"pod slot {subject[1]}" if subject[0] == "pod" else super().name(subject)
