"""quiescent-agreement: at rest, every structure tells the same story as the API server.

Checked by the coordinator after every worker exited and the informers
drained the event log: nothing in flight, cache == API, allocated devices ==
API, and every claim allocated to exactly one device of its own.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from shmstress.api import Found, Invariant, Scope, Subject, Workers
from shmstress.trackers.dra.invariants.common import naming
from shmstress.trackers.dra.names import NO_ID

if TYPE_CHECKING:
    from shmstress.trackers.dra.tracker import DraTracker


class Disagreement(enum.IntEnum):
    IN_FLIGHT = 0
    CACHE = 1
    ALLOCATED = 2
    UNALLOCATED = 3
    SHARED_DEVICE = 4


class QuiescentAgreement(Invariant):
    name = "quiescent-agreement"
    summary = "at rest: cache and allocated devices equal the API server, nothing in flight"
    fields = ("kind", "claim", "device", "a", "b")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        names = naming(params)
        kind = Disagreement(fields["kind"])
        claim = names.claim(fields["claim"])
        device = names.device(fields["device"])
        if kind is Disagreement.IN_FLIGHT:
            return f"claim {claim} is still in flight with device {device} at rest"
        if kind is Disagreement.CACHE:
            return (
                f"assume cache has claim {claim} on {names.device(fields['a'])} but the API "
                f"server has it on {names.device(fields['b'])}"
            )
        if kind is Disagreement.ALLOCATED:
            return (
                f"allocated devices has {device} held by "
                f"{_claim_or_none(names.claim, fields['a'])} but the API server by "
                f"{_claim_or_none(names.claim, fields['b'])}"
            )
        if kind is Disagreement.UNALLOCATED:
            return f"claim {claim} never got a device"
        return f"device {device} is held by claims {claim} and {names.claim(fields['a'])}"

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        kind = Disagreement(fields["kind"])
        subjects: list[Subject] = [("claim", fields["claim"]), ("device", fields["device"])]
        if kind is Disagreement.CACHE:
            subjects += [("device", fields["a"]), ("device", fields["b"])]
        elif kind in (Disagreement.ALLOCATED, Disagreement.SHARED_DEVICE):
            subjects += [("claim", fields["a"]), ("claim", fields.get("b", NO_ID))]
        return Scope(subjects=tuple(s for s in subjects if s[1] != NO_ID))

    def check_at_rest(self, tracker: DraTracker) -> list[Found]:
        found: list[Found] = []

        def add(kind: Disagreement, claim: int = NO_ID, device: int = NO_ID, a: int = NO_ID,
                b: int = NO_ID) -> None:
            found.append(Found(
                self.name, {"kind": kind, "claim": claim, "device": device, "a": a, "b": b}
            ))

        # Plain lists: the coordinator checks after every controlled execution, and on the
        # DRA tracker's small arrays a numpy call costs more than a Python pass over them.
        api_device = tracker.api.device.mv.tolist()
        for claim, device in enumerate(tracker.in_flight.device.mv.tolist()):
            if device != NO_ID:
                add(Disagreement.IN_FLIGHT, claim, device)
        cache_device = tracker.cache.latest_device.mv.tolist()
        for claim, (cached, api) in enumerate(zip(cache_device, api_device, strict=True)):
            if cached != api:
                add(Disagreement.CACHE, claim, a=cached, b=api)
        api_owner = [NO_ID] * tracker.devices
        for claim, dev in enumerate(api_device):
            if dev != NO_ID:
                if api_owner[dev] != NO_ID:
                    add(Disagreement.SHARED_DEVICE, claim, dev, a=api_owner[dev])
                api_owner[dev] = claim
        held = tracker.allocated.claim_of.mv.tolist()
        for device, (holder, owner) in enumerate(zip(held, api_owner, strict=True)):
            if holder != owner:
                add(Disagreement.ALLOCATED, device=device, a=holder, b=owner)
        for claim, dev in enumerate(api_device):
            if dev == NO_ID:
                add(Disagreement.UNALLOCATED, claim)
        return found


def _claim_or_none(name: Callable[[int], str], claim: int) -> str:
    return "no claim" if claim == NO_ID else name(claim)
