"""SCTBench ``twostage_bad``: a two-phase update that a reader sees between its phases.

``funcA`` sets ``data1`` under one lock, then ``data2 = data1 + 1`` under the
other; ``funcB`` reads both, each under its lock, and asserts they are one
apart. One thread of each (``iTThreads`` = ``iRThreads`` = 1).

The C source is not in the stored copy of SCTBench this port was written from;
it follows Fray's line-by-line Java translation of it (cmu-pasta/fray, which
cites SCTBench's file).
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Lock

from shmstress.bench.sctbench._shared import Cell

I_T_THREADS = 1
I_R_THREADS = 1


@dataclass(frozen=True)
class Globals:
    data1_value: Cell
    data2_value: Cell
    data1_lock: Lock
    data2_lock: Lock


def func_a(g: Globals) -> None:
    with g.data1_lock:
        g.data1_value.value = 1
    with g.data2_lock:
        g.data2_value.value = g.data1_value.value + 1


def func_b(g: Globals) -> None:
    with g.data1_lock:
        if g.data1_value.value == 0:
            return
        t1 = g.data1_value.value
    with g.data2_lock:
        t2 = g.data2_value.value
    if t2 != t1 + 1:
        raise AssertionError("twostage_bad: data2 != data1 + 1")  # BAD


def twostage_bad() -> None:
    data1_value = mp.Value("i", 0, lock=False)
    data2_value = mp.Value("i", 0, lock=False)
    data1_lock = mp.Lock()
    data2_lock = mp.Lock()
    g = Globals(data1_value, data2_value, data1_lock, data2_lock)
    t_pool = [mp.Process(target=func_a, args=(g,)) for _ in range(I_T_THREADS)]
    r_pool = [mp.Process(target=func_b, args=(g,)) for _ in range(I_R_THREADS)]
    for t in t_pool + r_pool:
        t.start()
    for t in t_pool + r_pool:
        t.join()
