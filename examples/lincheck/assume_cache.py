"""The DRA scheduler plugin's assume cache, as a data structure whose operations race.

    shmstress lincheck examples/lincheck/assume_cache.py:UnorderedEventsCache  # fails
    shmstress lincheck examples/lincheck/assume_cache.py:OrderedEventsCache    # passes

The cache holds each ResourceClaim as the informer last saw it (``add``, ``update``: kept
only if its resourceVersion is newer; ``update`` says whether it was) and as the scheduler
assumed it after writing its allocation (``assume``: refused with ``AssumeOutOfSync`` for
an older resourceVersion; ``restore`` drops the assumption). Every change queues an event
(claim, old device, new device); the allocated-devices tracker consumes them, and the
scheduler asks it which device a claim holds when it allocates the next pod (``get``).
The tracker in ``shmstress.trackers.dra`` runs the same cache with roles and invariants;
this is the object alone, for a linearizability test.

``get`` reads the tracker only. A write changes the cache under its lock and the tracker
when its event is delivered, later: a ``get`` that read both could see a write half done
even in the fixed version, which upstream never promised against. What upstream promises,
and the fix keeps, is that the tracker has caught up when the write returns.

The race is the first root cause upstream fixed ("events-unordered"): any caller pops
queued events under the cache lock and delivers them after releasing it, so a caller can
find its own event already popped by another caller, which has not delivered it yet, and
return. After ``assume`` returned, the tracker does not know the device is taken: the
scheduler may give it to a second pod. The fix ("ordered") runs the whole pop-and-deliver
loop under one emit lock: when a call returns, every event queued before it was delivered.
"""

import multiprocessing as mp
from typing import ClassVar

from hypothesis import strategies as st

CLAIMS = 2
NO_DEVICE = -1
QUEUE = 16  # a ring of events; a program has far fewer operations
_HEAD, _TAIL = 0, 1

claims = st.integers(0, CLAIMS - 1)
devices = st.integers(0, 2)  # gpu-0 .. gpu-2
versions = st.integers(1, 4)


def _device(number):
    return None if number == NO_DEVICE else f"gpu-{number}"


class AssumeOutOfSync(Exception):  # noqa: N818 - upstream's wording
    """Assume was asked to store an object older than the cached one."""


class UnorderedEventsCache:
    operations: ClassVar = {
        "add": claims,
        "update": (claims, devices, versions),
        "assume": (claims, devices, versions),
        "restore": claims,
        "get": claims,
    }

    def __init__(self):
        self.lock = mp.Lock()
        self.api_device = mp.Array("i", [NO_DEVICE] * CLAIMS, lock=False)
        self.api_rv = mp.Array("i", CLAIMS, lock=False)
        self.latest_device = mp.Array("i", [NO_DEVICE] * CLAIMS, lock=False)
        self.latest_rv = mp.Array("i", CLAIMS, lock=False)
        self.events = mp.Array("i", 3 * QUEUE, lock=False)  # claim, old, new
        self.counters = mp.Array("i", 2, lock=False)
        self.allocated = mp.Array("i", [NO_DEVICE] * CLAIMS, lock=False)  # the tracker's view

    # -- writes: each queues an event, then delivers ------------------------------------
    def add(self, claim):
        """The informer sees the claim for the first time: unallocated, resourceVersion 1."""
        return self.update(claim, NO_DEVICE, 1)

    def update(self, claim, device, rv):
        """Informer update; False if the object is not newer than the stored one."""
        with self.lock:
            stored = rv > self.latest_rv[claim]
            if stored:
                self._push(claim, self.latest_device[claim], device)
                self.api_device[claim] = self.latest_device[claim] = device
                self.api_rv[claim] = self.latest_rv[claim] = rv
        self.emit_events()
        return stored

    def assume(self, claim, device, rv):
        with self.lock:
            if rv < self.latest_rv[claim]:
                raise AssumeOutOfSync(f"claim {claim}: stored rv {self.latest_rv[claim]}, "
                                      f"assumed rv {rv}")
            self._push(claim, self.latest_device[claim], device)
            self.latest_device[claim] = device
            self.latest_rv[claim] = rv
        self.emit_events()

    def restore(self, claim):
        with self.lock:
            old, api = self.latest_device[claim], self.api_device[claim]
            self.latest_device[claim] = api
            self.latest_rv[claim] = self.api_rv[claim]
            if old != api:
                self._push(claim, old, api)
        self.emit_events()

    def get(self, claim):
        """The device the allocated-devices tracker holds for the claim (None: none)."""
        return _device(self.allocated[claim])

    def _push(self, claim, old, new):
        tail = self.counters[_TAIL]
        slot = 3 * (tail % QUEUE)
        self.events[slot], self.events[slot + 1], self.events[slot + 2] = claim, old, new
        self.counters[_TAIL] = tail + 1

    # -- delivery -------------------------------------------------------------------------
    def emit_events(self):
        self._deliver_queued()

    def _deliver_queued(self):
        while True:
            with self.lock:
                head = self.counters[_HEAD]
                if head == self.counters[_TAIL]:
                    return
                slot = 3 * (head % QUEUE)
                claim, new = self.events[slot], self.events[slot + 2]
                self.counters[_HEAD] = head + 1
            self.allocated[claim] = new  # the tracker's handler, outside the cache lock


class OrderedEventsCache(UnorderedEventsCache):
    def __init__(self):
        super().__init__()
        self.emit_lock = mp.Lock()

    def emit_events(self):
        with self.emit_lock:
            self._deliver_queued()
