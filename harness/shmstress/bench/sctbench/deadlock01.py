"""SCTBench ``deadlock01_bad``: two locks taken in opposite orders.

The C source is not in the stored copy of SCTBench this port was written from;
it follows Fray's line-by-line Java translation of it (cmu-pasta/fray, which
cites SCTBench's file), without Fray's added ``isLocked`` checks.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Lock

from shmstress.bench.sctbench._shared import Cell


@dataclass(frozen=True)
class Globals:
    a: Lock
    b: Lock
    counter: Cell


def thread1(g: Globals) -> None:
    g.a.acquire()
    g.b.acquire()  # BAD: deadlock
    g.counter.value += 1
    g.b.release()
    g.a.release()


def thread2(g: Globals) -> None:
    g.b.acquire()
    g.a.acquire()  # BAD: deadlock
    g.counter.value -= 1
    g.a.release()
    g.b.release()


def deadlock01_bad() -> None:
    a = mp.Lock()
    b = mp.Lock()
    counter = mp.Value("i", 1, lock=False)
    g = Globals(a, b, counter)
    t1 = mp.Process(target=thread1, args=(g,))
    t2 = mp.Process(target=thread2, args=(g,))
    t1.start()
    t2.start()
    t1.join()
    t2.join()
