"""A ticket dispenser in shared memory: the smallest complete shmstress tracker, in one file.

Clerks take numbered tickets from one shared counter and write each ticket
they hand out into a ledger. Read the counter, then write it back plus one:
in the ``racy`` variant those are two steps with nothing in between, so two
clerks can read the same number and hand out the same ticket (and one
increment is lost). The ``locked`` variant does both under one instrumented
lock. Run it with::

    shmstress run --tracker examples/counter_tracker.py:TicketTracker
    shmstress run --tracker examples/counter_tracker.py:TicketTracker --variant locked
    shmstress check --tracker examples/counter_tracker.py:TicketTracker

examples/README.md walks through every part of this file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from harness import (
    Arena,
    FoundViolation,
    InstrumentedLock,
    Invariant,
    Parameter,
    Phase,
    Role,
    Runtime,
    SharedArray,
    WorkerInfo,
)

NOBODY = -1


# -- 1. shared state: named int64 arrays, and instrumented locks --------------------------------
class Dispenser:
    """The counter clerks take tickets from."""

    def __init__(self, runtime: Runtime, arena: Arena, locked: bool) -> None:
        self.runtime = runtime
        self.next_ticket: SharedArray = arena.array("tickets.next", 1)
        self.lock: InstrumentedLock | None = runtime.lock("dispenser") if locked else None

    # -- 2. operations: every shared access is inside a lock or right after a point --------
    def take(self) -> int:
        if self.lock is not None:
            with self.lock.held("take ticket"):
                ticket = self.next_ticket.mv[0]
                self.next_ticket.mv[0] = ticket + 1
                return int(ticket)
        self.runtime.point("Reading next ticket")
        ticket = self.next_ticket.mv[0]
        self.runtime.point("Writing next ticket", ticket=int(ticket) + 1)
        self.next_ticket.mv[0] = ticket + 1
        return int(ticket)


class Ledger:
    """Who got which ticket. Each slot remembers the last ticket written to it."""

    def __init__(self, runtime: Runtime, arena: Arena, capacity: int, clerks: int) -> None:
        self.runtime = runtime
        self.capacity = capacity
        self.lock = runtime.lock("ledger")
        self.ticket = arena.array("ledger.ticket", capacity, NOBODY)
        self.clerk = arena.array("ledger.clerk", capacity, NOBODY)
        self.handed_out = arena.array("ledger.handed_out", max(1, clerks))

    def record(self, ticket: int, clerk: int, index: int) -> None:
        with self.lock.held("Handed out ticket", ticket=ticket):
            slot = ticket % self.capacity
            if self.ticket.mv[slot] == ticket:  # 3a. an invariant checked online
                self.runtime.violation("unique-tickets", ticket=ticket,
                                       first=self.clerk.mv[slot], second=clerk)
            self.ticket.mv[slot] = ticket
            self.clerk.mv[slot] = clerk
            self.handed_out.mv[index] += 1


# -- 3. invariants: a name, a summary, integer fields, and the words for a violation ------------
def _who(worker: int, workers: Sequence[WorkerInfo]) -> str:
    return workers[worker].describe() if 0 <= worker < len(workers) else f"worker {worker}"


class UniqueTickets:
    name = "unique-tickets"
    summary = "no ticket number is handed out twice"
    fields = ("ticket", "first", "second")

    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        return (f"ticket {fields['ticket']} was handed out twice: by "
                f"{_who(fields['first'], workers)} and by {_who(fields['second'], workers)}")


class NoLostUpdate:
    name = "no-lost-update"
    summary = "at rest, the counter equals the number of tickets handed out"
    fields = ("counter", "handed_out")

    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        lost = fields["handed_out"] - fields["counter"]
        return (f"the counter says {fields['counter']} tickets but {fields['handed_out']} were "
                f"handed out: {lost} increment(s) lost")


# -- 4. roles: the loop body of one worker process ---------------------------------------------
class Clerk:
    def __init__(self, tracker: TicketTracker, index: int) -> None:
        self.tracker = tracker
        self.index = index

    def step(self, phase: Phase) -> bool:
        if phase is not Phase.RUN:  # nothing outstanding to settle: finish at once
            return False
        ticket = self.tracker.dispenser.take()
        self.tracker.ledger.record(ticket, self.tracker.runtime.worker_id, self.index)
        return True


# -- 5. the tracker: variants, roles, parameters, invariants, and the coordinator's hooks -------
class TicketTracker:
    """A ticket counter and its ledger, with and without a lock around read-and-increment."""

    name: ClassVar[str] = "tickets"
    summary: ClassVar[str] = "a shared ticket counter: clerks read it and write it back plus one"
    variants: ClassVar[Mapping[str, str]] = {
        "racy": "read and write back as two steps: two clerks can take the same ticket (racy)",
        "locked": "read and write back under one instrumented lock (correct)",
    }
    roles: ClassVar[Mapping[str, str]] = {"clerk": "takes a ticket and records it in the ledger"}
    default_counts: ClassVar[Mapping[str, int]] = {"clerk": 2}
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "capacity": Parameter(1024, "ledger slots (tickets remembered for the duplicate check)",
                              minimum=16),
    }
    invariants: ClassVar[tuple[Invariant, ...]] = (UniqueTickets(), NoLostUpdate())

    def __init__(
        self, runtime: Runtime, arena: Arena, variant: str, params: Mapping[str, int]
    ) -> None:
        self.runtime = runtime
        clerks = len(runtime.role_workers.get("clerk", ())) or 1
        self.dispenser = Dispenser(runtime, arena, locked=variant == "locked")
        self.ledger = Ledger(runtime, arena, params["capacity"], clerks)

    def role(self, name: str, index: int) -> Role:
        if name == "clerk":
            return Clerk(self, index)
        raise ValueError(f"tickets has no role {name!r}")

    def drained(self) -> bool:
        return True  # a clerk finishes each ticket within one step

    def final_violations(self) -> list[FoundViolation]:
        counter = int(self.dispenser.next_ticket.mv[0])
        handed_out = int(self.ledger.handed_out.np.sum())
        if counter == handed_out:
            return []
        return [FoundViolation("no-lost-update", {"counter": counter, "handed_out": handed_out})]
