"""A small library in the shape of real ones that name their segments themselves: a
counter table in a segment called after the creating process's pid and a sequence number
(as job-queue and cache libraries do), attached by name in each worker; and a scratch
segment under the random ``psm_*`` name ``SharedMemory`` makes up, unlinked by the worker
that finishes last. The names differ in every run and every replay."""

import itertools
import multiprocessing as mp
import os
from multiprocessing import shared_memory

_SEQUENCE = itertools.count()


class CounterTable:
    """Counters in a segment of its own, named ``ctab-<pid>-<n>``."""

    def __init__(self, slots, name=None, lock=None):
        self.lock = lock
        if name is None:
            name = f"ctab-{os.getpid()}-{next(_SEQUENCE)}"
            self.segment = shared_memory.SharedMemory(name=name, create=True, size=8 * slots)
        else:
            self.segment = shared_memory.SharedMemory(name=name)
        self.name = name

    def attach(self):
        return CounterTable(0, self.name, self.lock)

    def bump(self, slot):
        if self.lock is not None:
            with self.lock:
                self._bump(slot)
        else:
            self._bump(slot)

    def _bump(self, slot):
        view = self.segment.buf
        view[slot] = view[slot] + 1

    def read(self, slot):
        return self.segment.buf[slot]

    def close(self):
        self.segment.close()

    def destroy(self):
        self.segment.close()
        self.segment.unlink()


def _worker(table):
    mine = table.attach()
    mine.bump(0)
    mine.close()


def _run(lock):
    table = CounterTable(4, lock=lock)
    try:
        workers = [mp.Process(target=_worker, args=(table,)) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        total = table.read(0)
    finally:
        table.destroy()
    assert total == 2, f"2 bumps, the counter is {total}"


def pid_named_racy():
    _run(None)


def pid_named_locked():
    _run(mp.Lock())


def _scratch_worker(name, done, lock):
    scratch = shared_memory.SharedMemory(name=name)
    scratch.buf[0] = scratch.buf[0] + 1
    with lock:
        done.value += 1
        last = done.value == 2
    total = scratch.buf[0]
    scratch.close()
    if last:  # the last one out checks and cleans up, under the random psm_ name
        scratch.unlink()
        assert total == 2, f"2 bumps, the scratch counter is {total}"


def random_named_racy():
    scratch = shared_memory.SharedMemory(create=True, size=16)
    done, lock = mp.Value("i", 0, lock=False), mp.Lock()
    workers = [mp.Process(target=_scratch_worker, args=(scratch.name, done, lock))
               for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    scratch.close()
