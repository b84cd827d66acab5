"""SCTBench ``wronglock_bad``: one thread updates under one lock, seven others under another.

``funcA`` increments ``dataValue`` under ``dataLock`` and asserts nobody changed it
meanwhile; ``funcB`` increments it under ``thisLock``, which does not exclude
``funcA``. One ``funcA`` thread, seven ``funcB`` threads (``iNum1`` = 1,
``iNum2`` = 7), as in SCTBench.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Lock

from shmstress.bench.sctbench._shared import Cell

I_NUM1 = 1
I_NUM2 = 7


@dataclass(frozen=True)
class Globals:
    data_value: Cell
    data_lock: Lock
    this_lock: Lock


def func_a(g: Globals) -> None:
    with g.data_lock:
        x = g.data_value.value
        g.data_value.value += 1
        if g.data_value.value != x + 1:
            raise AssertionError("wronglock_bad: dataValue != x + 1")  # BAD


def func_b(g: Globals) -> None:
    with g.this_lock:
        g.data_value.value += 1


def wronglock_bad() -> None:
    data_value = mp.Value("i", 0, lock=False)
    data_lock = mp.Lock()
    this_lock = mp.Lock()
    g = Globals(data_value, data_lock, this_lock)
    num1_pool = [mp.Process(target=func_a, args=(g,)) for _ in range(I_NUM1)]
    num2_pool = [mp.Process(target=func_b, args=(g,)) for _ in range(I_NUM2)]
    for t in num1_pool + num2_pool:
        t.start()
    for t in num1_pool + num2_pool:
        t.join()
