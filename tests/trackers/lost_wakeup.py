"""A lost wake-up: a consumer that goes to sleep when it finds no item, and a producer
that wakes it only if it already sleeps.

In ``racy`` the consumer checks for an item and says it sleeps in two separate steps,
and the producer adds an item and looks for a sleeper in two steps: when the producer
adds its last item and looks between the consumer's check and its going to sleep, the
wake-up is lost and the consumer waits for it forever (it yields at every turn: the
role is well behaved, the hang is the bug). In ``locked`` both do their two steps under
one lock. ``gives-up`` is ``racy`` with a consumer that stops waiting after ``patience``
turns (at rest, the items it left are the violation). In ``forgets`` the producer never
wakes anyone and the consumer goes to sleep before its first look: it waits forever, in
every execution and every free run, unless ``--param patience`` makes it give up (then
the items it left are found at rest, in every run).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Found, Invariant, Parameter, Phase, RoleSpec, Setup, Tracker, Workers


class _AllConsumed(Invariant):
    name = "all-consumed"
    summary = "every item produced is consumed"
    fields = ("left",)

    def render(self, fields: Mapping[str, int], workers: Workers,
               params: Mapping[str, int]) -> str:
        return f"{fields['left']} item(s) produced and never consumed"

    def check_at_rest(self, tracker: LostWakeup) -> list[Found]:
        left = int(tracker.items.mv[0])
        return [Found(self.name, {"left": left})] if left else []


class _Producer:
    """Adds ``items`` items, one per step, waking the consumer if it sleeps."""

    def __init__(self, tracker: LostWakeup, index: int) -> None:
        self.t = tracker
        self.left = tracker.count

    def step(self, phase: Phase) -> bool:
        if self.left == 0:
            return False
        self.left -= 1
        t = self.t
        if t.lock is not None:
            with t.lock.held("add item"):
                t.items.mv[0] += 1
                if t.sleeping.mv[0]:
                    t.wake.mv[0] = 1
            return True
        t.runtime.point("add item")
        t.items.mv[0] += 1
        t.runtime.point("look for a sleeper")
        if t.sleeping.mv[0] and not t.forgets:
            t.wake.mv[0] = 1
        return True


class _Consumer:
    """Takes items until it has taken ``items``; sleeps, yielding, when it finds none."""

    def __init__(self, tracker: LostWakeup, index: int) -> None:
        self.t = tracker
        self.taken = 0
        self.asleep = False
        self.turns = 0
        self.looked = False

    def step(self, phase: Phase) -> bool:
        t = self.t
        if self.taken == t.count:
            return False
        if t.forgets and not self.looked:
            self.looked = True
            t.runtime.point("go to sleep")
            t.sleeping.mv[0] = 1
            self.asleep = True
            return True
        if self.asleep:
            t.runtime.point("wait for wake-up")
            if not t.wake.mv[0]:
                self.turns += 1
                if t.patience and self.turns >= t.patience:
                    return False  # gives up: what it left is found at rest
                return t.runtime.idle()
            t.wake.mv[0] = 0
            t.sleeping.mv[0] = 0
            self.asleep = False
            return True
        if t.lock is not None:
            with t.lock.held("check items"):
                self._take_or_sleep()
            return True
        t.runtime.point("check items")
        if t.items.mv[0] > 0:
            t.items.mv[0] -= 1
            self.taken += 1
            return True
        t.runtime.point("go to sleep")
        t.sleeping.mv[0] = 1
        self.asleep = True
        return True

    def _take_or_sleep(self) -> None:
        t = self.t
        if t.items.mv[0] > 0:
            t.items.mv[0] -= 1
            self.taken += 1
        else:
            t.sleeping.mv[0] = 1
            self.asleep = True


class LostWakeup(Tracker):
    name: ClassVar[str] = "lost-wakeup"
    summary: ClassVar[str] = "a consumer that sleeps until a producer wakes it"
    variants: ClassVar[Mapping[str, str]] = {
        "racy": "check-then-sleep and add-then-wake in separate steps (a lost wake-up)",
        "locked": "both under one lock",
        "gives-up": "racy, with a consumer that stops waiting after --param patience turns",
        "forgets": "nobody wakes the consumer, which sleeps first: it waits forever",
    }
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "producer": RoleSpec(_Producer, "adds items, wakes a sleeping consumer"),
        "consumer": RoleSpec(_Consumer, "takes items, sleeps when there is none")}
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "items": Parameter(2, "items the producer adds", minimum=1),
        "patience": Parameter(0, "turns a consumer waits before it gives up (0: its variant's: "
                                 "60 in gives-up, for ever in the others)")}
    invariants: ClassVar[tuple[Invariant, ...]] = (_AllConsumed(),)

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime = setup.runtime
        self.lock = setup.lock("mailbox") if variant == "locked" else None
        self.items = setup.array("mailbox.items", 1)
        self.sleeping = setup.array("mailbox.sleeping", 1)
        self.wake = setup.array("mailbox.wake", 1)
        self.count = params["items"]
        self.patience = params["patience"] or (60 if variant == "gives-up" else 0)
        self.forgets = variant == "forgets"
