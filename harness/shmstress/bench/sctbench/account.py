"""SCTBench ``account_bad``: a check that reads the balance as if the deposit were a withdrawal.

The three threads each take the mutex once; ``check_result`` asserts the wrong
balance, but only once the deposit and the withdrawal are both done, so the
bug needs ``check_result`` (started first) to run last.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Lock

from shmstress.bench.sctbench._shared import Cell


@dataclass(frozen=True)
class Globals:
    m: Lock
    x: Cell
    y: Cell
    z: Cell
    balance: Cell
    deposit_done: Cell
    withdraw_done: Cell


def deposit(g: Globals) -> None:
    with g.m:
        g.balance.value = g.balance.value + g.y.value
        g.deposit_done.value = 1


def withdraw(g: Globals) -> None:
    with g.m:
        g.balance.value = g.balance.value - g.z.value
        g.withdraw_done.value = 1


def check_result(g: Globals) -> None:
    with g.m:
        if g.deposit_done.value and g.withdraw_done.value:
            assert g.balance.value == (g.x.value - g.y.value) - g.z.value, (  # BAD
                "account_bad: balance == (x - y) - z")


def account_bad() -> None:
    m = mp.Lock()
    x = mp.Value("i", 0, lock=False)
    y = mp.Value("i", 0, lock=False)
    z = mp.Value("i", 0, lock=False)
    balance = mp.Value("i", 0, lock=False)
    deposit_done = mp.Value("i", 0, lock=False)
    withdraw_done = mp.Value("i", 0, lock=False)
    g = Globals(m, x, y, z, balance, deposit_done, withdraw_done)
    g.x.value = 1
    g.y.value = 2
    g.z.value = 4
    g.balance.value = g.x.value
    t3 = mp.Process(target=check_result, args=(g,))
    t1 = mp.Process(target=deposit, args=(g,))
    t2 = mp.Process(target=withdraw, args=(g,))
    t3.start()
    t1.start()
    t2.start()
    for t in (t3, t1, t2):  # the C main returns without joining
        t.join()
