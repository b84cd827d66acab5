"""SCTBench ``carter01_bad``: a readers-writers style gate that deadlocks.

The first of each class takes ``l`` while holding ``m``; the first thread of
class B then blocks on ``l`` with ``m`` held, and the class A thread that holds
``l`` needs ``m`` to let it go. Two more threads do nothing, as in the C code.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Lock

from shmstress.bench.sctbench._shared import Cell


@dataclass(frozen=True)
class Globals:
    m: Lock
    l: Lock  # noqa: E741 - the C name
    a: Cell
    b: Cell


def t1(g: Globals) -> None:
    g.m.acquire()
    g.a.value += 1
    if g.a.value == 1:
        g.l.acquire()
    g.m.release()
    # perform class A operation
    g.m.acquire()
    g.a.value -= 1
    if g.a.value == 0:
        g.l.release()
    g.m.release()


def t2(g: Globals) -> None:
    g.m.acquire()
    g.b.value += 1
    if g.b.value == 1:
        g.l.acquire()  # BAD: deadlock
    g.m.release()
    # perform class B operation
    g.m.acquire()
    g.b.value -= 1
    if g.b.value == 0:
        g.l.release()
    g.m.release()


def t3(g: Globals) -> None:
    pass


def t4(g: Globals) -> None:
    pass


def carter01_bad() -> None:
    m = mp.Lock()
    l = mp.Lock()  # noqa: E741 - the C name
    a = mp.Value("i", 0, lock=False)  # A
    b = mp.Value("i", 0, lock=False)  # B
    g = Globals(m, l, a, b)
    a1 = mp.Process(target=t1, args=(g,))
    b1 = mp.Process(target=t2, args=(g,))
    a2 = mp.Process(target=t3, args=(g,))
    b2 = mp.Process(target=t4, args=(g,))
    for t in (a1, b1, a2, b2):
        t.start()
    for t in (a1, b1, a2, b2):
        t.join()
