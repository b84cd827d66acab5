"""A spin lock over shared memory by compare-and-swap (the ``atomics`` package), guarding a
counter in the same segment.

``SpinLock`` takes its word from 0 to 1 with ``cmpxchg_strong`` and spins (no sleep, no
yield) while another process has it; ``store(0)`` lets it go. ``TestThenSetLock`` is the
classic mistake: it loads the word, sees 0, and stores 1, two operations with room for
another process to do the same in between.
"""

from __future__ import annotations

import os
import struct
from multiprocessing import Process, shared_memory

import atomics

PREFIX = os.environ.get("SHMSTRESS_TESTS_PREFIX", "shmstress_tests_")  # tests/conftest.py

NAME = f"{PREFIX}spinlock"
COUNT = struct.Struct("q")


class SpinLock:
    def __init__(self, block: shared_memory.SharedMemory) -> None:
        self._block = block

    def acquire(self) -> None:
        with atomics.atomicview(buffer=self._block.buf[0:4], atype=atomics.INT) as word:
            while not word.cmpxchg_strong(0, 1).success:
                pass

    def release(self) -> None:
        with atomics.atomicview(buffer=self._block.buf[0:4], atype=atomics.INT) as word:
            word.store(0)


class TestThenSetLock(SpinLock):
    def acquire(self) -> None:
        with atomics.atomicview(buffer=self._block.buf[0:4], atype=atomics.INT) as word:
            while word.load() != 0:
                pass
            word.store(1)


def add(kind: type[SpinLock]) -> None:
    block = shared_memory.SharedMemory(NAME)
    lock = kind(block)
    lock.acquire()
    n = COUNT.unpack_from(block.buf, 8)[0]
    COUNT.pack_into(block.buf, 8, n + 1)
    lock.release()
    block.close()


def _twice(kind: type[SpinLock]) -> int:
    block = shared_memory.SharedMemory(NAME, create=True, size=16)
    block.buf[:16] = bytes(16)
    workers = [Process(target=add, args=(kind,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    n = int(COUNT.unpack_from(block.buf, 8)[0])
    block.close()
    block.unlink()
    return n


def racy() -> None:
    n = _twice(TestThenSetLock)
    assert n == 2, f"2 increments, counter is {n}"


def locked() -> None:
    n = _twice(SpinLock)
    assert n == 2, f"2 increments, counter is {n}"
