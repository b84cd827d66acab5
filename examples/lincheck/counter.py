"""A counter in shared memory, as a linearizability test sees it: racy, and fixed.

    shmstress lincheck examples/lincheck/counter.py:RacyCounter    # not linearizable
    shmstress lincheck examples/lincheck/counter.py:LockedCounter  # passes

``increment`` returns the value it set. ``self.count.value += 1`` reads the value, adds one
and writes it back, two steps: two processes that both read 0 both return 1, and no
sequential order of two increments returns 1 twice. Holding the Value's lock across the
read and the write makes the increment one step as far as the others can tell.
"""

import multiprocessing as mp
from typing import ClassVar

from hypothesis import strategies as st


class RacyCounter:
    operations: ClassVar = {"increment": None, "add": st.integers(1, 3), "get": None}

    def __init__(self):
        self.count = mp.Value("i", 0, lock=False)

    def increment(self):
        self.count.value += 1
        return self.count.value

    def add(self, amount):
        self.count.value += amount

    def get(self):
        return self.count.value


class LockedCounter:
    operations: ClassVar = {"increment": None, "add": st.integers(1, 3), "get": None}

    def __init__(self):
        self.count = mp.Value("i", 0)

    def increment(self):
        with self.count.get_lock():
            self.count.value += 1
            return self.count.value

    def add(self, amount):
        with self.count.get_lock():
            self.count.value += amount

    def get(self):
        return self.count.value
