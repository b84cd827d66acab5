"""The claim deallocation tracker's words: API calls of the KEP's actors, claim and pod names.

The KEP discussion has no log lines of its own, so messages are the API
calls the scheduler, kubelet and driver make, as a client's verbose log
would show them; the steps that decide the race (reads and writes of the
claim and of DeallocationRequested) are at verbosity 0. The initial state
says whether the claim was allocated and its deallocation requested.

What a point's step reads and writes (``accesses``) is said in the API
server's objects: a claim's status (``claim``), its ``podscheduling`` object,
a ``pod``'s phase and the ``pod age`` the kubelet counts, the driver's
``hardware`` per claim, and the resourceVersion counter every update bumps.
The invariants' oracle reads (ReservedFor when the hardware is freed, the
flag when a pod is reserved) are checks, not steps of the system: not declared.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

from shmstress.api import EVERY, Access, Effect, Subject, Words
from shmstress.trackers.claim_deallocation.names import NO_ID, Naming

ALLOCATED = "allocated"
REQUESTED = "deallocation requested"

_VERBOSITY = {
    "get podscheduling": 0,
    "get claim": 0,
    "update claim status": 0,
    "update podscheduling": 0,
    "Reserving claim for pod": 0,
    "Deallocation requested and claim unused": 0,
    "Deallocating claim in the driver": 0,
    "Allocated claim in the driver": 0,
    "update pod": 1,
    "get pod": 2,
}
_PLUMBING = 3  # polling for running pods or pending requests

_STEPS = {
    "get podscheduling": "reads PodScheduling",
    "get claim": "reads the claim",
    "Reserving claim for pod": "decides to reserve the claim for the pod",
    "Deallocation requested and claim unused": "sees the claim requested and unused",
    "Deallocating claim in the driver": "frees the claim's hardware",
    "Allocated claim in the driver": "allocates the claim's hardware",
}


_COUNTER = Access("resourceVersion", 0, True)  # every update takes the next one


def _on_claim(label: str, claim: int) -> tuple[Access, ...] | None:
    """What the step after a point naming ``claim`` touches."""
    status, scheduling = ("claim", claim), ("podscheduling", claim)
    return {
        "get claim": (Access(*status, False),),
        "get podscheduling": (Access(*scheduling, False),),
        "update claim status": (Access(*status, False), Access(*status, True), _COUNTER),
        "update podscheduling": (Access(*scheduling, False), Access(*scheduling, True),
                                 _COUNTER),
        "Allocated claim in the driver": (Access("hardware", claim, True),),
        "Deallocating claim in the driver": (Access("hardware", claim, True),),
        # the next point is the API call or the driver's lock that follows the decision
        "Reserving claim for pod": (),
        "Deallocation requested and claim unused": (),
    }.get(label)


_ON_NONE: dict[str, tuple[Access, ...]] = {
    "pod runs": (Access("pod", EVERY, False), Access("pod age", EVERY, True)),
    "any pod running": (Access("pod", EVERY, False),),
    "any deallocation requested": (Access("claim", EVERY, False),
                                   Access("podscheduling", EVERY, False)),
}


class ClaimWords(Words):
    logger = "resourceclaim"
    verbosities: ClassVar[Mapping[str, int]] = _VERBOSITY
    default_verbosity: ClassVar[int] = _PLUMBING
    facts = (ALLOCATED, REQUESTED)

    def __init__(self, naming: Naming) -> None:
        self._names = naming

    def field_namer(self, key: str) -> Callable[[int], object] | None:
        return {"claim": self._names.claim, "pod": self._names.pod,
                "reservedFor": self._names.pods}.get(key)

    def step(self, label: str, fields: Mapping[str, object]) -> str | None:
        if label == "update claim status":
            return self._status_update(fields)
        if label == "update podscheduling":
            verb = "sets" if fields.get("requested") else "clears"
            return f"{verb} DeallocationRequested in PodScheduling"
        if label == "update pod":
            return {"running": "binds the pod", "waiting": "finishes the pod"}.get(
                str(fields.get("phase")))
        return _STEPS.get(label)

    def _status_update(self, fields: Mapping[str, object]) -> str:
        if fields.get("requested") is True:
            return "sets DeallocationRequested in the claim status"
        if fields.get("allocated") is False:
            return "clears the claim's allocation"
        reserved = fields.get("reservedFor")
        users = self._names.pods(reserved) if isinstance(reserved, int) else []
        return f"writes ReservedFor [{', '.join(users)}] into the claim status"

    def subjects(self, label: str, fields: Mapping[str, object]) -> tuple[Subject, ...]:
        return tuple((key, value) for key, value in fields.items()
                     if key in ("claim", "pod") and isinstance(value, int) and value != NO_ID)

    def effects(self, label: str, fields: Mapping[str, object]) -> tuple[Effect, ...]:
        claim = fields.get("claim")
        if not isinstance(claim, int):
            return ()
        found = []
        if label == "update claim status" and isinstance(fields.get("allocated"), bool):
            found.append(Effect(("claim", claim), ALLOCATED, bool(fields["allocated"])))
        if label in ("update claim status", "update podscheduling") and \
                isinstance(fields.get("requested"), bool):
            found.append(Effect(("claim", claim), REQUESTED, bool(fields["requested"])))
        return tuple(found)

    def accesses(self, label: str, fields: Mapping[str, object]) -> tuple[Access, ...] | None:
        claim, pod = fields.get("claim"), fields.get("pod")
        if isinstance(claim, int):
            return _on_claim(label, claim)
        if isinstance(pod, int) and label == "get pod":
            return (Access("pod", pod, False),)
        if isinstance(pod, int) and label == "update pod":
            return (Access("pod", pod, True), Access("pod age", pod, True))
        return _ON_NONE.get(label)

    def initial_facts(self, subject: Subject) -> Mapping[str, bool]:
        # Claims start unallocated with nothing requested (tracker.claim_deallocation).
        return {ALLOCATED: False, REQUESTED: False} if subject[0] == "claim" else {}

    def name(self, subject: Subject) -> str:
        kind, ident = subject
        if kind == "claim":
            return f'claim "{self._names.claim(ident)}"'
        if kind == "pod":
            return f'pod "{self._names.pod(ident)}"'
        if kind == "podscheduling":
            return f'the PodScheduling of claim "{self._names.claim(ident)}"'
        if kind == "hardware":
            return f'the hardware of claim "{self._names.claim(ident)}"'
        return super().name(subject)
