"""The claim deallocation tracker's words: API calls of the KEP's actors, claim and pod names.

The KEP discussion has no log lines of its own, so messages are the API
calls the scheduler, kubelet and driver make, as a client's verbose log
would show them; the steps that decide the race (reads and writes of the
claim and of DeallocationRequested) are at verbosity 0. The initial state
says whether the claim was allocated and its deallocation requested.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

from shmstress.api import Effect, Subject, Words
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

    def initial_facts(self, subject: Subject) -> Mapping[str, bool]:
        # Claims start unallocated with nothing requested (tracker.claim_deallocation).
        return {ALLOCATED: False, REQUESTED: False} if subject[0] == "claim" else {}

    def name(self, subject: Subject) -> str:
        kind, ident = subject
        if kind == "claim":
            return f'claim "{self._names.claim(ident)}"'
        if kind == "pod":
            return f'pod "{self._names.pod(ident)}"'
        return super().name(subject)
