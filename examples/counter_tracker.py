"""A ticket dispenser in shared memory: the smallest complete shmstress tracker, in one file.

Clerks take numbered tickets from one shared counter and write each ticket
they hand out into a ledger. Read the counter, then write it back plus one:
in the ``racy`` variant those are two steps with nothing in between, so two
clerks can read the same number and hand out the same ticket (and one
increment is lost). The ``locked`` variant does both under one instrumented
lock. Run it with::

    shmstress run --tracker examples/counter_tracker.py:TicketTracker
    shmstress run --tracker examples/counter_tracker.py:TicketTracker --variant locked
    shmstress run --tracker examples/counter_tracker.py:TicketTracker --mode controlled
    shmstress check --tracker examples/counter_tracker.py:TicketTracker

examples/README.md walks through every part of this file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import (
    NO_ID,
    Effect,
    Found,
    Invariant,
    Lock,
    Parameter,
    Phase,
    RoleSpec,
    Scope,
    Setup,
    SharedArray,
    Subject,
    Tracker,
    Words,
    Workers,
)


# -- 1. shared state: named int64 arrays, instrumented locks, and ghost state -------------------
class Dispenser:
    """The counter clerks take tickets from."""

    def __init__(self, setup: Setup, locked: bool) -> None:
        self.runtime = setup.runtime
        self.next_ticket: SharedArray = setup.array("tickets.next", 1)
        self.lock: Lock | None = setup.lock("dispenser") if locked else None

    # -- 2. operations: every shared access is inside a lock or right after a point --------
    def take(self) -> tuple[int, int]:
        """(ticket, sequence number of the point where taking it began)."""
        if self.lock is not None:
            with self.lock.held("Took ticket") as seq:
                ticket = int(self.next_ticket.mv[0])
                self.next_ticket.mv[0] = ticket + 1
                return ticket, seq
        since = self.runtime.point("Reading next ticket")
        ticket = int(self.next_ticket.mv[0])
        self.runtime.point("Writing next ticket", ticket=ticket)
        self.next_ticket.mv[0] = ticket + 1
        return ticket, since


class Ledger:
    """Who got which ticket. Each slot remembers the last ticket written to it, and (a ghost
    array, oracle bookkeeping) where taking that ticket began."""

    def __init__(self, setup: Setup, capacity: int, clerks: int) -> None:
        self.runtime = setup.runtime
        self.capacity = capacity
        self.lock = setup.lock("ledger")
        self.ticket = setup.array("ledger.ticket", capacity, NO_ID)
        self.clerk = setup.array("ledger.clerk", capacity, NO_ID)
        self.since = setup.ghost.array("ledger.since", capacity, NO_ID)
        self.handed_out = setup.array("ledger.handed_out", max(1, clerks))  # needs a slot

    def record(self, ticket: int, clerk: int, index: int, since: int) -> None:
        with self.lock.held("Handed out ticket", ticket=ticket):
            slot = ticket % self.capacity
            if self.ticket.mv[slot] == ticket:  # 3a. an invariant checked online
                self.runtime.violation("unique-tickets", ticket=ticket,
                                       first=self.clerk.mv[slot], second=clerk,
                                       since=min(since, self.since.mv[slot]))
            self.ticket.mv[slot] = ticket
            self.clerk.mv[slot] = clerk
            self.since.mv[slot] = since
            self.handed_out.mv[index] += 1


# -- 3. invariants: a name, a summary, integer fields, and the words for a violation ------------
class UniqueTickets(Invariant):
    name = "unique-tickets"
    summary = "no ticket number is handed out twice"
    fields = ("ticket", "first", "second", "since")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        return (f"ticket {fields['ticket']} was handed out twice: by "
                f"{workers.describe(fields['first'])} and by "
                f"{workers.describe(fields['second'])}")

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        # the ticket, told from the second clerk's side, from where it began taking it
        return Scope(subjects=(("ticket", fields["ticket"]),), worker=fields["second"],
                     start=fields["since"])


class NoLostUpdate(Invariant):
    name = "no-lost-update"
    summary = "at rest, the counter equals the number of tickets handed out"
    fields = ("counter", "handed_out")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        lost = fields["handed_out"] - fields["counter"]
        return (f"the counter says {fields['counter']} tickets but {fields['handed_out']} were "
                f"handed out: {lost} increment(s) lost")

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        return Scope(subjects=())  # its fields are counts, not objects the log names

    def check_at_rest(self, tracker: TicketTracker) -> list[Found]:  # 3b. at rest
        counter = int(tracker.dispenser.next_ticket.mv[0])
        handed_out = int(tracker.ledger.handed_out.np.sum())
        if counter == handed_out:
            return []
        return [Found(self.name, {"counter": counter, "handed_out": handed_out})]


# -- 4. roles: the loop body of one worker process ---------------------------------------------
class Clerk:
    def __init__(self, tracker: TicketTracker, index: int) -> None:
        self.tracker = tracker
        self.index = index

    def step(self, phase: Phase) -> bool:
        if phase is not Phase.RUN:  # nothing outstanding to settle: finish at once
            return False
        ticket, since = self.tracker.dispenser.take()
        self.tracker.ledger.record(ticket, self.tracker.runtime.worker_id, self.index, since)
        return True


# -- 5. words for logs and explanations (optional) ---------------------------------------------
HANDED_OUT = "handed out"


class TicketWords(Words):
    """Which ticket a record is about, what a step makes true, and how it reads."""

    logger = "tickets"
    facts = (HANDED_OUT,)

    def step(self, label: str, fields: Mapping[str, object]) -> str | None:
        return _phrases(fields.get("ticket", "the ticket")).get(label)

    def labels(self) -> frozenset[str]:  # `shmstress check` warns of any that no step reached
        return frozenset(_phrases("the ticket"))

    def subjects(self, label: str, fields: Mapping[str, object]) -> tuple[Subject, ...]:
        ticket = fields.get("ticket")
        return (("ticket", ticket),) if isinstance(ticket, int) else ()

    def effects(self, label: str, fields: Mapping[str, object]) -> tuple[Effect, ...]:
        ticket = fields.get("ticket")
        if label == "Handed out ticket" and isinstance(ticket, int):
            return (Effect(("ticket", ticket), HANDED_OUT, True),)
        return ()

    def initial_facts(self, subject: Subject) -> Mapping[str, bool]:
        return {HANDED_OUT: False}  # no ticket is handed out when the run starts

    def name(self, subject: Subject) -> str:
        return f"ticket {subject[1]}"


def _phrases(ticket: object) -> dict[str, str]:
    """How each point reads in an explanation."""
    return {
        "Reading next ticket": "reads the counter",
        "Writing next ticket": f"writes {ticket} + 1 back",
        "Took ticket": "takes a ticket under the lock",
        "Handed out ticket": f"hands out ticket {ticket}",
    }


# -- 6. the tracker: variants, roles, parameters, invariants, and what it builds ----------------
class TicketTracker(Tracker):
    """A ticket counter and its ledger, with and without a lock around read-and-increment."""

    name: ClassVar[str] = "tickets"
    summary: ClassVar[str] = "a shared ticket counter: clerks read it and write it back plus one"
    variants: ClassVar[Mapping[str, str]] = {
        "racy": "read and write back as two steps: two clerks can take the same ticket (racy)",
        "locked": "read and write back under one instrumented lock (correct)",
    }
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "clerk": RoleSpec(Clerk, "takes a ticket and records it in the ledger", count=2),
    }
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "capacity": Parameter(1024, "ledger slots (tickets remembered for the duplicate check)",
                              minimum=16),
    }
    invariants: ClassVar[tuple[Invariant, ...]] = (UniqueTickets(), NoLostUpdate())

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime = setup.runtime
        self.dispenser = Dispenser(setup, locked=variant == "locked")
        self.ledger = Ledger(setup, params["capacity"], setup.workers("clerk"))

    @classmethod
    def words(cls, params: Mapping[str, int]) -> Words:
        return TicketWords()
