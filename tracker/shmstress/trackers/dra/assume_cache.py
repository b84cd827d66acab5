"""The assume cache: informer objects plus objects assumed after an API call.

Informer add/update stores an object only if its resourceVersion is newer than
the stored one (so a resync cannot undo an assumption); ``assume`` stores a
newer-or-equal object the scheduler wrote; ``restore`` drops the assumption.
Every change queues an event (old device, new device) for the allocated
devices tracker.

How queued events get delivered is the first root cause upstream fixed:

- unordered (old): any caller pops events under the cache lock and delivers
  them after releasing it. A caller may find its own event already popped by
  someone else and return before that event was delivered.
- ordered (fixed): the whole pop-and-deliver loop runs under one emit lock, so
  when a caller returns, every event queued before, its own included, has been
  delivered, in queue order.

Which event a pop took is known only once the queue is read under the lock,
after the point, so it is a log call right after it ("Popped event"): an
explanation can then name the worker holding a claim's undelivered event.
"""

from __future__ import annotations

from collections.abc import Callable

from shmstress.api import Lock, Runtime, Setup
from shmstress.trackers.common import mask_equal
from shmstress.trackers.dra.coverage import Coverage
from shmstress.trackers.dra.names import NO_ID

_HEAD = 0
_TAIL = 1

EventHandler = Callable[[int, int, int], None]


class AssumeOutOfSync(Exception):  # noqa: N818 - upstream's wording
    """Assume was asked to store an object older than the cached one."""


class EventQueueOverflow(Exception):  # noqa: N818
    """More events queued than delivered by far: a delivery loop is stuck."""


class AssumeCache:
    def __init__(
        self,
        runtime: Runtime,
        setup: Setup,
        lock: Lock,
        emit_lock: Lock | None,
        coverage: Coverage,
        claims: int,
    ) -> None:
        self._runtime = runtime
        self.lock = lock
        self.emit_lock = emit_lock
        self.api_device = setup.array("dra.cache.api_device", claims, NO_ID)
        self.api_rv = setup.array("dra.cache.api_rv", claims)
        self.latest_device = setup.array("dra.cache.latest_device", claims, NO_ID)
        self.latest_rv = setup.array("dra.cache.latest_rv", claims)
        self.queue_capacity = max(256, 8 * claims)
        self.q_claim = setup.array("dra.cache.q.claim", self.queue_capacity)
        self.q_old = setup.array("dra.cache.q.old", self.queue_capacity)
        self.q_new = setup.array("dra.cache.q.new", self.queue_capacity)
        self.q_counters = setup.array("dra.cache.q.counters", 2)
        self._coverage = coverage
        self._handler: EventHandler | None = None
        # The informer has synced before the run: claims 0.. with rv 1.., unallocated.
        self.api_rv.np[:] = range(1, claims + 1)
        self.latest_rv.np[:] = self.api_rv.np

    def add_event_handler(self, handler: EventHandler) -> None:
        self._handler = handler

    # -- writes (each queues an event, then delivers) --------------------------------------
    def update(self, claim: int, device: int, rv: int) -> bool:
        """Informer add/update; False if the object is not newer than the stored one."""
        with self.lock.held("informer update", claim=claim, device=device, resourceVersion=rv):
            stored = rv > self.latest_rv.mv[claim]
            if stored:
                old = self.latest_device.mv[claim]
                self.api_device.mv[claim] = device
                self.api_rv.mv[claim] = rv
                self.latest_device.mv[claim] = device
                self.latest_rv.mv[claim] = rv
                self._push(claim, old, device)
        self.emit_events()
        return stored

    def assume(self, claim: int, device: int, rv: int) -> None:
        with self.lock.held(
            "Claim stored in assume cache", claim=claim, device=device, resourceVersion=rv
        ):
            stored_rv = self.latest_rv.mv[claim]
            if rv < stored_rv:
                raise AssumeOutOfSync(f"claim {claim} stored rv {stored_rv}, assume rv {rv}")
            old = self.latest_device.mv[claim]
            self.latest_device.mv[claim] = device
            self.latest_rv.mv[claim] = rv
            self._push(claim, old, device)
        self.emit_events()

    def restore(self, claim: int) -> None:
        with self.lock.held("restore claim", claim=claim):
            old = self.latest_device.mv[claim]
            api = self.api_device.mv[claim]
            self.latest_device.mv[claim] = api
            self.latest_rv.mv[claim] = self.api_rv.mv[claim]
            if old != api:
                self._push(claim, old, api)
        self.emit_events()

    def _push(self, claim: int, old: int, new: int) -> None:
        counters = self.q_counters.mv
        tail = counters[_TAIL]
        if tail - counters[_HEAD] >= self.queue_capacity:
            raise EventQueueOverflow(f"{self.queue_capacity} events queued, none delivered")
        slot = tail % self.queue_capacity
        self.q_claim.mv[slot] = claim
        self.q_old.mv[slot] = old
        self.q_new.mv[slot] = new
        counters[_TAIL] = tail + 1
        self._coverage.changed(claim, old, new)

    # -- delivery -------------------------------------------------------------------------
    def emit_events(self) -> None:
        if self.emit_lock is None:
            self._deliver_queued()
            return
        with self.emit_lock.held("deliver queued events"):
            self._deliver_queued()

    def _deliver_queued(self) -> None:
        handler = self._handler
        counters = self.q_counters.mv
        while True:
            with self.lock.held("pop event"):
                head = counters[_HEAD]
                if head == counters[_TAIL]:
                    return
                slot = head % self.queue_capacity
                claim, old, new = self.q_claim.mv[slot], self.q_old.mv[slot], self.q_new.mv[slot]
                counters[_HEAD] = head + 1
                self._runtime.log("Popped event", claim=claim, device=new, old=old)
            if handler is not None:
                handler(claim, old, new)

    # -- reads ----------------------------------------------------------------------------
    def unallocated(self) -> list[bool]:
        """Bool per claim: not allocated in the latest object (the claim lister's view)."""
        with self.lock.held("list assumed claims"):
            return mask_equal(self.latest_device, NO_ID)

    def get(self, claim: int) -> tuple[int, int]:
        with self.lock.held("get assumed claim", claim=claim):
            return self.latest_device.mv[claim], self.latest_rv.mv[claim]
