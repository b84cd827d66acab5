"""SCTBench ``lazy01_bad``: three threads under one mutex; the third fails if it runs last.

The C source is not in the stored copy of SCTBench this port was written from;
it follows Fray's line-by-line Java translation of it (cmu-pasta/fray, which
cites SCTBench's file).
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Lock

from shmstress.bench.sctbench._shared import Cell


@dataclass(frozen=True)
class Globals:
    mutex: Lock
    data: Cell


def thread1(g: Globals) -> None:
    with g.mutex:
        g.data.value += 1


def thread2(g: Globals) -> None:
    with g.mutex:
        g.data.value += 2


def thread3(g: Globals) -> None:
    with g.mutex:
        if g.data.value >= 3:
            raise AssertionError("lazy01_bad: assert(0) once data >= 3")  # BAD


def lazy01_bad() -> None:
    mutex = mp.Lock()
    data = mp.Value("i", 0, lock=False)
    g = Globals(mutex, data)
    threads = [mp.Process(target=f, args=(g,)) for f in (thread1, thread2, thread3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
