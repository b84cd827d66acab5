"""A consumer that waits for ever on a shared queue: the shape of a work queue whose
producer sends one item fewer than its consumer expects.

The queue is a ring in shared memory with a head and a tail; every point names it with a
``queue=0`` field (so the default words make ``("queue", 0)`` an object of the model)
and the item it moves. In ``short`` the producer puts ``items - 1`` items and the
consumer, which takes ``items``, waits at an empty queue for ever (yielding at each
turn: the role is well behaved, the hang is the bug). In ``full`` it puts them all.
The words declare what each step reads and writes of the queue, and that a put makes
the item queued and a get makes it taken.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import (
    Access,
    Effect,
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

QUEUE = "queue"
CAPACITY = 8


class _AllTaken(Invariant):
    name = "all-taken"
    summary = "every item put is taken"
    fields = ("left",)

    def render(self, fields: Mapping[str, int], workers: Workers,
               params: Mapping[str, int]) -> str:
        return f"{fields['left']} item(s) left in the queue"

    def check_at_rest(self, tracker: StuckQueue) -> list[Found]:
        left = int(tracker.ends.mv[1]) - int(tracker.ends.mv[0])
        return [Found(self.name, {"left": left})] if left else []


class _Producer:
    def __init__(self, tracker: StuckQueue, index: int) -> None:
        self.t = tracker
        self.left = tracker.count - (1 if tracker.short else 0)
        self.next = 1

    def step(self, phase: Phase) -> bool:
        t = self.t
        if self.left == 0:
            return False
        tail = int(t.ends.mv[1])
        if tail - int(t.ends.mv[0]) >= CAPACITY:
            t.runtime.point("queue full", queue=0)
            return t.runtime.idle()
        t.runtime.point("put", queue=0, item=self.next)
        t.ring.mv[tail % CAPACITY] = self.next
        t.ends.mv[1] = tail + 1
        self.next += 1
        self.left -= 1
        return True


class _Consumer:
    def __init__(self, tracker: StuckQueue, index: int) -> None:
        self.t = tracker
        self.taken = 0

    def step(self, phase: Phase) -> bool:
        t = self.t
        if self.taken == t.count:
            return False
        head = int(t.ends.mv[0])
        if head == int(t.ends.mv[1]):
            t.runtime.point("wait for an item", queue=0)
            return t.runtime.idle()
        item = int(t.ring.mv[head % CAPACITY])
        t.runtime.point("get", queue=0, item=item)
        t.ends.mv[0] = head + 1
        self.taken += 1
        return True


class StuckQueueWords(Words):
    facts = ("queued", "taken")

    def step(self, label: str, fields: Mapping[str, object]) -> str | None:
        item = fields.get("item")
        return f"{label} item {item}" if item is not None else label

    def accesses(self, label: str, fields: Mapping[str, object]) -> tuple[Access, ...] | None:
        if label in ("put", "get"):
            return (Access(QUEUE, 0, True),)
        return (Access(QUEUE, 0, False),)

    def effects(self, label: str, fields: Mapping[str, object]) -> tuple[Effect, ...]:
        item = fields.get("item")
        if not isinstance(item, int):
            return ()
        if label == "put":
            return (Effect(("item", item), "queued", True),)
        if label == "get":
            return (Effect(("item", item), "queued", False), Effect(("item", item), "taken", True))
        return ()


class StuckQueue(Tracker):
    name: ClassVar[str] = "stuck-queue"
    summary: ClassVar[str] = "a consumer that waits for ever on a shared queue"
    variants: ClassVar[Mapping[str, str]] = {
        "short": "the producer puts one item fewer than the consumer takes",
        "full": "the producer puts every item",
    }
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "producer": RoleSpec(_Producer, "puts items on the queue"),
        "consumer": RoleSpec(_Consumer, "takes items, waiting at an empty queue")}
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "items": Parameter(3, "items the consumer takes", minimum=1)}
    invariants: ClassVar[tuple[Invariant, ...]] = (_AllTaken(),)

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime = setup.runtime
        self.ring = setup.array("queue.ring", CAPACITY)
        self.ends = setup.array("queue.ends", 2)
        self.count = params["items"]
        self.short = variant == "short"

    @classmethod
    def words(cls, params: Mapping[str, int]) -> Words:
        return StuckQueueWords()
