"""A race that crashes a worker instead of breaking an invariant (loaded by path).

Takers pop items from a shared stack. ``racy`` checks that the stack is not empty, then
pops in a second step: two takers can both see the last item, and the second one's pop
finds the stack empty and raises. ``locked`` checks and pops under one lock: it never
raises. No invariant is ever violated: the crash is the failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Invariant, Parameter, Phase, RoleSpec, Setup, Tracker, Workers


class _NeverBroken(Invariant):
    name = "stack-in-bounds"
    summary = "the stack's count stays within its capacity (the pop raises first)"
    fields = ("count",)

    def render(self, fields: Mapping[str, int], workers: Workers,
               params: Mapping[str, int]) -> str:
        return f"the stack holds {fields['count']} items"


class _Taker:
    def __init__(self, tracker: RacyCrash, index: int) -> None:
        self.t = tracker

    def step(self, phase: Phase) -> bool:
        t = self.t
        if phase is not Phase.RUN:
            return False
        if t.lock is not None:
            with t.lock.held("Pop", stack=0):
                if t.count.mv[0] > 0:
                    t.count.mv[0] -= 1
            return True
        t.runtime.point("Check", stack=0)
        if t.count.mv[0] <= 0:
            return True
        t.runtime.point("Pop", stack=0)
        left = int(t.count.mv[0]) - 1
        if left < 0:
            raise IndexError("pop from an empty stack")
        t.count.mv[0] = left
        return True


class _Filler:
    def __init__(self, tracker: RacyCrash, index: int) -> None:
        self.t = tracker

    def step(self, phase: Phase) -> bool:
        t = self.t
        if phase is not Phase.RUN:
            return False
        with t.lock_fill.held("Push", stack=0):
            if t.count.mv[0] < 1:
                t.count.mv[0] += 1
        return True


class RacyCrash(Tracker):
    name: ClassVar[str] = "racy-crash"
    summary: ClassVar[str] = "a stack whose racy pop raises"
    variants: ClassVar[Mapping[str, str]] = {
        "racy": "check, then pop in another step", "locked": "check and pop under one lock"}
    parameters: ClassVar[Mapping[str, Parameter]] = {}
    invariants = (_NeverBroken(),)
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "taker": RoleSpec(_Taker, "pops an item if there is one", count=2),
        "filler": RoleSpec(_Filler, "pushes an item when the stack is empty", count=1),
    }

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime = setup.runtime
        self.count = setup.array("stack.count", 1)
        self.count.mv[0] = 1
        self.lock = setup.lock("stack") if variant == "locked" else None
        self.lock_fill = self.lock if self.lock is not None else setup.lock("fill")
