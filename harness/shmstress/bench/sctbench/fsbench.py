"""SCTBench ``fsbench_bad`` and ``fsbench_ok``: threads that each allocate a block to an inode.

Thread ``tid`` locks inode ``tid % NUMINODE`` and scans for a free block under
that block's lock. ``_bad`` starts 27 threads for 26 inode locks: the thread with
tid 26 indexes past ``locki``, which the assert just before the lock catches (so
every execution that starts that thread fails). ``_ok`` starts 26. Same thread
counts as SCTBench (28 and 27 processes with main).
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Lock

from shmstress.bench.sctbench._shared import Cells

NUMBLOCKS = 26
NUMINODE = 32
NUM_THREADS_BAD = 27
NUM_THREADS_OK = 26


@dataclass(frozen=True)
class Globals:
    num_threads: int  # the #define NUM_THREADS
    locki: tuple[Lock, ...]
    lockb: tuple[Lock, ...]
    busy: Cells
    inode: Cells


def thread_routine(g: Globals, tid: int) -> None:
    assert 0 <= tid < g.num_threads
    i = tid % NUMINODE
    assert 0 <= i < NUMBLOCKS, f"fsbench: inode lock {i} of {NUMBLOCKS}"  # BAD in _bad
    with g.locki[i]:
        if g.inode[i] == 0:
            b = (i * 2) % NUMBLOCKS
            for _ in range(NUMBLOCKS // 2):
                with g.lockb[b]:
                    if not g.busy[b]:
                        g.busy[b] = 1
                        g.inode[i] = b + 1
                        break
                b = (b + 1) % NUMBLOCKS
        assert 0 <= i < NUMBLOCKS


def _main(num_threads: int) -> None:
    locki = tuple(mp.Lock() for _ in range(NUMBLOCKS))
    lockb = tuple(mp.Lock() for _ in range(NUMBLOCKS))
    busy = mp.Array("i", NUMBLOCKS, lock=False)
    inode = mp.Array("i", NUMINODE, lock=False)
    g = Globals(num_threads, locki, lockb, busy, inode)
    for i in range(NUMBLOCKS):
        g.busy[i] = 0
    tids = [mp.Process(target=thread_routine, args=(g, i)) for i in range(num_threads)]
    for t in tids:
        t.start()
    for t in tids:
        t.join()


def fsbench_bad() -> None:
    _main(NUM_THREADS_BAD)


def fsbench_ok() -> None:
    _main(NUM_THREADS_OK)
