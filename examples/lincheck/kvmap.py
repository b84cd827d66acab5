"""A key-value map in shared memory with a lock per key, and a resize that races.

    shmstress lincheck examples/lincheck/kvmap.py:RacyResizeMap --key $KEY  # loses a put
    shmstress lincheck examples/lincheck/kvmap.py:KeyedMap --key $KEY       # passes

with ``KEY=examples/lincheck/kvmap.py:key_of``.

Keys are ``0 .. KEYS - 1``. Each key's value lives in its entry of the active table, one
of two Arrays (``tables``): operations on different keys touch different entries under
different locks, so they need no common lock. When the map holds more keys than the
active table was sized for, the put that noticed moves every entry to the other table and
makes it the active one (a real map would also rehash into more buckets).
``RacyResizeMap`` does that move under its own key's lock only: a put of another key that
writes the old table after the move read its entry is lost. ``KeyedMap`` takes every
key's lock, in key order, for the move.

``key_of`` partitions the history by key (``--key``): a history is linearizable if each
key's operations are, so the check runs per key.
"""

import multiprocessing as mp
from typing import ClassVar

from hypothesis import strategies as st

KEYS = 3
FIRST_SIZE = 1  # keys the first table is sized for: the put of a second key resizes


def key_of(operation):
    return operation.args[0]


class RacyResizeMap:
    operations: ClassVar = {"put": (st.integers(0, KEYS - 1), st.integers(1, 9)),
                            "get": st.integers(0, KEYS - 1)}

    def __init__(self):
        self.locks = [mp.Lock() for _ in range(KEYS)]
        self.tables = [mp.Array("i", KEYS, lock=False), mp.Array("i", KEYS, lock=False)]
        self.active = mp.Value("i", 0, lock=False)
        self.count = mp.Value("i", 0)  # its own lock: puts of different keys count it

    def put(self, key, value):
        """The value the key had (None: it had none)."""
        with self.locks[key]:
            table = self.tables[self.active.value]
            old = table[key]
            table[key] = value
            if old == 0 and self._counted() == FIRST_SIZE + 1:  # exactly one put resizes
                self._resize(key)
        return old or None

    def get(self, key):
        with self.locks[key]:
            return self.tables[self.active.value][key] or None

    def _counted(self):
        with self.count.get_lock():
            self.count.value += 1
            return self.count.value

    def _resize(self, key):
        self._move()

    def _move(self):
        """Copy every entry to the other table and make it the active one."""
        active = self.active.value
        old, new = self.tables[active], self.tables[1 - active]
        for key in range(KEYS):
            new[key] = old[key]
        self.active.value = 1 - active


class KeyedMap(RacyResizeMap):
    def _resize(self, key):
        """Every other key's lock too, in key order (the caller holds its own), so that no
        put writes the old table while it is copied. No deadlock: only one put ever
        resizes, and every other operation holds one lock and waits for no other."""
        others = [lock for other, lock in enumerate(self.locks) if other != key]
        for lock in others:
            lock.acquire()
        try:
            self._move()
        finally:
            for lock in reversed(others):
                lock.release()
