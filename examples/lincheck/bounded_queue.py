"""A bounded FIFO queue in one SharedMemory segment, as a linearizability test sees it.

    shmstress lincheck examples/lincheck/bounded_queue.py:RacyQueue    # loses or duplicates an item
    shmstress lincheck examples/lincheck/bounded_queue.py:LockedQueue  # passes

The segment holds a ring of ``CAPACITY`` slots and two counters, ``head`` (the next item to
take) and ``tail`` (the next free slot). ``put`` returns False when the queue is full,
``get`` returns None when it is empty. Without the lock, two puts read the same ``tail``
and write the same slot (one item is lost), and two gets read the same ``head`` and both
take the same item (it is duplicated). The operations are the methods marked
``@operation``, with their arguments' strategies.
"""

import multiprocessing as mp
from multiprocessing import shared_memory

from hypothesis import strategies as st

from shmstress.testing import operation

CAPACITY = 2
_HEAD, _TAIL, _SLOTS = 0, 1, 2


class RacyQueue:
    def __init__(self):
        self.segment = shared_memory.SharedMemory(create=True, size=8 * (_SLOTS + CAPACITY))
        self.words = self.segment.buf.cast("q")

    @operation(st.integers(1, 9))
    def put(self, item):
        tail = self.words[_TAIL]
        if tail - self.words[_HEAD] == CAPACITY:
            return False
        self.words[_SLOTS + tail % CAPACITY] = item
        self.words[_TAIL] = tail + 1
        return True

    @operation()
    def get(self):
        head = self.words[_HEAD]
        if head == self.words[_TAIL]:
            return None
        item = self.words[_SLOTS + head % CAPACITY]
        self.words[_HEAD] = head + 1
        return item


class LockedQueue(RacyQueue):
    def __init__(self):
        super().__init__()
        self.lock = mp.Lock()

    @operation(st.integers(1, 9))
    def put(self, item):
        with self.lock:
            return super().put(item)

    @operation()
    def get(self):
        with self.lock:
            return super().get()
