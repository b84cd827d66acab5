"""A small library in the shape of real ones: a list of ints in a ``SharedMemory`` segment,
guarded by a POSIX named semaphore (``posix_ipc``).

The segment holds a header (count, capacity, moved) and the items. ``append`` takes the
semaphore; when the list is full it grows: a new, larger segment under the same name,
the items copied over, the old one unlinked. ``OrphaningList`` is the real bug's shape:
a process that attached before the growth keeps its mapping of the old segment, an
orphan nobody else reads, and its appends are lost. ``ReattachingList`` marks the old
segment as moved before unlinking it, and every operation re-attaches by name when the
segment it holds has moved.
"""

from __future__ import annotations

import os
import struct
from multiprocessing import Process, shared_memory

import posix_ipc

PREFIX = os.environ.get("SHMSTRESS_TESTS_PREFIX", "shmstress_tests_")  # tests/conftest.py

NAME = f"{PREFIX}posix_list"
LOCK = f"/{PREFIX}posix_list"
HEADER = struct.Struct("qqq")  # count, capacity, moved
ITEM = struct.Struct("q")


class OrphaningList:
    def __init__(self, name: str, capacity: int = 0, create: bool = False) -> None:
        self._name = name
        self._sem = posix_ipc.Semaphore(LOCK, posix_ipc.O_CREAT, initial_value=1)
        if create:
            self._shm = shared_memory.SharedMemory(name, create=True,
                                                   size=HEADER.size + ITEM.size * capacity)
            HEADER.pack_into(self._shm.buf, 0, 0, capacity, 0)
        else:
            self._shm = shared_memory.SharedMemory(name)

    def _attached(self) -> None:
        """The segment this process holds is the list's (the bug: it may not be)."""

    def append(self, value: int) -> None:
        with self._sem:
            self._attached()
            count, capacity, _ = HEADER.unpack_from(self._shm.buf, 0)
            if count == capacity:
                capacity = self._grow(count, capacity)
            ITEM.pack_into(self._shm.buf, HEADER.size + ITEM.size * count, value)
            HEADER.pack_into(self._shm.buf, 0, count + 1, capacity, 0)

    def _grow(self, count: int, capacity: int) -> int:
        items = bytes(self._shm.buf[HEADER.size:HEADER.size + ITEM.size * count])
        self._moved()
        self._shm.close()
        self._shm.unlink()
        self._shm = shared_memory.SharedMemory(
            self._name, create=True, size=HEADER.size + ITEM.size * 2 * capacity)
        self._shm.buf[HEADER.size:HEADER.size + len(items)] = items
        HEADER.pack_into(self._shm.buf, 0, count, 2 * capacity, 0)
        return 2 * capacity

    def _moved(self) -> None:
        """Tell the processes that hold the old segment (the bug: nothing)."""

    def items(self) -> list[int]:
        with self._sem:
            self._attached()
            count = HEADER.unpack_from(self._shm.buf, 0)[0]
            return list(struct.unpack_from(f"{count}q", self._shm.buf, HEADER.size))

    def close(self) -> None:
        self._shm.close()
        self._sem.close()

    def destroy(self) -> None:
        self._shm.unlink()
        self._sem.unlink()
        self.close()


class ReattachingList(OrphaningList):
    def _attached(self) -> None:
        if HEADER.unpack_from(self._shm.buf, 0)[2]:
            self._shm.close()
            self._shm = shared_memory.SharedMemory(self._name)

    def _moved(self) -> None:
        count, capacity, _ = HEADER.unpack_from(self._shm.buf, 0)
        HEADER.pack_into(self._shm.buf, 0, count, capacity, 1)


# -- the users' code ----------------------------------------------------------------------------
def appender(kind: type[OrphaningList], value: int) -> None:
    numbers = kind(NAME)
    numbers.append(value)
    numbers.append(value + 10)
    numbers.close()


def _appended(kind: type[OrphaningList]) -> list[int]:
    numbers = kind(NAME, capacity=2, create=True)
    workers = [Process(target=appender, args=(kind, value)) for value in (1, 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    numbers.close()
    final = kind(NAME)  # attached afresh: whatever the list is now
    items = final.items()
    final.destroy()
    return sorted(items)


def orphan() -> None:
    items = _appended(OrphaningList)
    assert items == [1, 2, 11, 12], f"appended 1, 2, 11, 12; the list has {items}"


def reattach() -> None:
    items = _appended(ReattachingList)
    assert items == [1, 2, 11, 12], f"appended 1, 2, 11, 12; the list has {items}"
