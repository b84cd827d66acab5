"""Processes add to counts in a numpy array over a SharedMemory block.

    shmstress test examples/plain/numpy_counts.py:racy --trace examples/plain/numpy_counts.py
    shmstress test examples/plain/numpy_counts.py:locked --trace examples/plain/numpy_counts.py

numpy indexing is not a multiprocessing primitive, so without ``--trace`` its
reads and writes are not points and no interleaving can split ``counts[0] += 1``.
With ``--trace`` on this file, the read and the write of the element are two
steps, and the lost update shows.
"""

from multiprocessing import Lock, Process, shared_memory

import numpy as np

SLOTS = 4


def add_one(name, lock):
    block = shared_memory.SharedMemory(name=name)
    counts = np.ndarray((SLOTS,), dtype=np.int64, buffer=block.buf)
    if lock is None:
        counts[0] += 1
    else:
        with lock:
            counts[0] += 1
    del counts
    block.close()


def _run(lock):
    block = shared_memory.SharedMemory(create=True, size=SLOTS * 8)
    counts = np.ndarray((SLOTS,), dtype=np.int64, buffer=block.buf)
    counts[:] = 0
    workers = [Process(target=add_one, args=(block.name, lock)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    total = int(counts[0])
    del counts
    block.close()
    block.unlink()
    assert total == 2, f"2 increments, counts[0] is {total}"


def racy():
    _run(None)


def locked():
    _run(Lock())
