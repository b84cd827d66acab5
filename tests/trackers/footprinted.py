"""A lost update followed by a run of steps that commute, with words that say what each
step touches: the case partial-order reduction is for.

Each of two counters first reads the shared total in one step and writes it back plus
one in the next: when both read before either writes, an update is lost (``racy``; at
rest the total is short of the tally). Then it takes a lock to count itself in a tally,
and bumps its own cell ``private`` times (steps no other worker touches). In ``locked``
the total is bumped with the tally, under the lock. A search that knows the bumps
commute need only order the total and tally steps; a bounded exhaustive search tries
its preemptions among the bumps at the end of the execution first. The last point of
each role, ``done``, is left undeclared (an undeclared step conflicts with all, so a
search for the race leaves it out: ``undeclared=0``); the
tally's step also marks the counter's own cell in a nested acquire (a log record, not a
point), which the words declare too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import (
    Access,
    Found,
    Invariant,
    Parameter,
    Phase,
    RoleSpec,
    Setup,
    Tracker,
    Words,
    Workers,
)

OWN = "own cell"
TALLY = "tally"
TOTAL = "total"


class _NoLostUpdate(Invariant):
    name = "no-lost-update"
    summary = "the total counts every counter"
    fields = ("total", "expected")
    """The tally counts each counter under the lock: the total must equal it."""

    def render(self, fields: Mapping[str, int], workers: Workers,
               params: Mapping[str, int]) -> str:
        return f"total {fields['total']}, expected {fields['expected']}: an update was lost"

    def check_at_rest(self, tracker: Footprinted) -> list[Found]:
        total, expected = int(tracker.total.mv[0]), int(tracker.tally.mv[0])
        return [] if total == expected else [
            Found(self.name, {"total": total, "expected": expected})]


class _Counter:
    def __init__(self, tracker: Footprinted, index: int) -> None:
        self.t = tracker
        self.me = tracker.runtime.worker_id
        self.left = tracker.private
        self.stage = 0
        self.done = False

    def step(self, phase: Phase) -> bool:
        t = self.t
        runtime = t.runtime
        self.stage += 1
        if self.stage == 1 and not t.locked:
            runtime.point("read total")
            seen = int(t.total.mv[0])
            runtime.point("write total", value=seen + 1)
            t.total.mv[0] = seen + 1
            return True
        if self.stage <= 2:
            self.stage = 2
            with t.lock.held("count in tally and total" if t.locked else "count in tally"):
                t.tally.mv[0] += 1
                if t.locked:
                    t.total.mv[0] += 1
                with t.lock.held("mark own cell", cell=self.me):  # nested: no point
                    t.cells.mv[self.me] += 1
                runtime.log("counted", cell=self.me)  # a log call, not an access
            return True
        if self.left:
            self.left -= 1
            runtime.point("bump own cell", cell=self.me)
            t.cells.mv[self.me] += 1
            return True
        if t.undeclared and not self.done:
            self.done = True
            runtime.point("done")
            return True
        return False


class FootprintedWords(Words):
    """What each step touches: its own cell, the tally (under the lock), or the total."""

    def accesses(self, label: str, fields: Mapping[str, object]) -> tuple[Access, ...] | None:
        if label in ("bump own cell", "mark own cell"):
            cell = fields.get("cell")
            return (Access(OWN, cell, True),) if isinstance(cell, int) else None
        if label == "count in tally":
            return (Access(TALLY, 0, True),)
        if label == "count in tally and total":
            return (Access(TALLY, 0, True), Access(TOTAL, 0, True))
        if label == "read total":
            return (Access(TOTAL, 0, False),)
        if label == "write total":
            return (Access(TOTAL, 0, True),)
        return None  # "done": undeclared, it conflicts with every step


class Footprinted(Tracker):
    name: ClassVar[str] = "footprinted"
    summary: ClassVar[str] = "a lost update after steps that commute, with declared accesses"
    variants: ClassVar[Mapping[str, str]] = {
        "racy": "the total is read and written in two steps (a lost update)",
        "locked": "the total is bumped under the tally's lock",
    }
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "counter": RoleSpec(_Counter, "bumps its own cell, then the tally and the total",
                            count=2)}
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "private": Parameter(4, "steps on its own cell before the shared ones", minimum=0),
        "undeclared": Parameter(1, "1: each counter ends with an undeclared point", maximum=1)}
    invariants: ClassVar[tuple[Invariant, ...]] = (_NoLostUpdate(),)

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime = setup.runtime
        self.lock = setup.lock("tally")
        self.cells = setup.array("footprinted.cells", 8)
        self.tally = setup.array("footprinted.tally", 1)
        self.total = setup.array("footprinted.total", 1)
        self.private = params["private"]
        self.locked = variant == "locked"
        self.undeclared = bool(params["undeclared"])

    @classmethod
    def words(cls, params: Mapping[str, int]) -> Words:
        return FootprintedWords()
