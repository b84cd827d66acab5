"""A bounded FIFO queue in one SharedMemory segment, as a linearizability test sees it.

    shmstress lincheck examples/lincheck/bounded_queue.py:RacyQueue --model $MODEL  # fails
    shmstress lincheck examples/lincheck/bounded_queue.py:LockedQueue --model $MODEL  # passes

with ``MODEL=examples/lincheck/bounded_queue.py:QueueModel``.

The segment holds a ring of ``CAPACITY`` slots and two counters, ``head`` (the next item to
take) and ``tail`` (the next free slot). ``put`` returns False when the queue is full,
``get`` returns None when it is empty. Without the lock, two puts read the same ``tail``
and write the same slot (one item is lost), and two gets read the same ``head`` and both
take the same item (it is duplicated). The operations are the methods marked
``@operation``, with their arguments' strategies.

``QueueModel`` is the sequential specification, in plain Python (``--model``): the class
itself could be its own model, but each state the check tries would be a fresh segment,
and an execution may make at most 256.
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

    @operation(st.integers(1, 9))
    def put(self, item):
        words = self.segment.buf.cast("q")  # a view per call: none outlives the segment
        tail = words[_TAIL]
        if tail - words[_HEAD] == CAPACITY:
            return False
        words[_SLOTS + tail % CAPACITY] = item
        words[_TAIL] = tail + 1
        return True

    @operation()
    def get(self):
        words = self.segment.buf.cast("q")
        head = words[_HEAD]
        if head == words[_TAIL]:
            return None
        item = words[_SLOTS + head % CAPACITY]
        words[_HEAD] = head + 1
        return item


class QueueModel:
    """What a bounded FIFO queue of ``CAPACITY`` returns, one operation at a time."""

    def __init__(self):
        self.items = []

    def put(self, item):
        if len(self.items) == CAPACITY:
            return False
        self.items.append(item)
        return True

    def get(self):
        return self.items.pop(0) if self.items else None


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
