"""SCTBench ``arithmetic_prog_bad`` and ``_ok``: a producer and a consumer over one counter.

Two condition variables share one mutex. ``_bad`` asserts that the consumer's
total is *not* the sum it always is (N=3): every execution that ends fails, so
the bug is found by any schedule. ``_ok`` (N=4) asserts the sum.

``pthread_cond_signal`` is called after the mutex is released; Python's
``notify`` needs the condition's lock, so each signal takes the mutex just for
the notify, still after the release (another thread can run in between).
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Condition, Lock

from shmstress.bench.sctbench._shared import Cell

N_BAD = 3
N_OK = 4


@dataclass(frozen=True)
class Globals:
    n: int  # the #define N
    num: Cell
    total: Cell
    flag: Cell
    m: Lock
    empty: Condition
    full: Condition


def thread1(g: Globals) -> None:
    i = 0
    while i < g.n:
        with g.m:
            while g.num.value > 0:
                g.empty.wait()
            g.num.value += 1
        with g.full:
            g.full.notify()
        i += 1


def thread2(g: Globals) -> None:
    j = 0
    while j < g.n:
        with g.m:
            while g.num.value == 0:
                g.full.wait()
            g.total.value = g.total.value + j
            g.num.value -= 1
        with g.empty:
            g.empty.notify()
        j += 1
    g.total.value = g.total.value + j
    g.flag.value = 1


def _main(n: int) -> Globals:
    num = mp.Value("i", 0, lock=False)
    total = mp.Value("L", 0, lock=False)  # unsigned long
    flag = mp.Value("i", 0, lock=False)
    m = mp.Lock()
    empty = mp.Condition(m)
    full = mp.Condition(m)
    g = Globals(n, num, total, flag, m, empty, full)
    g.num.value = 0
    g.total.value = 0
    t1 = mp.Process(target=thread1, args=(g,))
    t2 = mp.Process(target=thread2, args=(g,))
    t1.start()
    t2.start()
    t1.join()
    t2.join()
    return g


def arithmetic_prog_bad() -> None:
    g = _main(N_BAD)
    if g.flag.value:
        assert g.total.value != (N_BAD * (N_BAD + 1)) // 2, (  # BAD
            "arithmetic_prog_bad: total != N*(N+1)/2")


def arithmetic_prog_ok() -> None:
    g = _main(N_OK)
    if g.flag.value:
        assert g.total.value == (N_OK * (N_OK + 1)) // 2, "arithmetic_prog_ok: total"
