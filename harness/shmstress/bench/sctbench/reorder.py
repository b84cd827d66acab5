"""SCTBench ``reorder_3_bad``, ``_4``, ``_5``, ``_10``: writers of a pair that a checker sees
half-written.

Each set thread writes ``a = 1`` then ``b = -1``; the check thread asserts it sees
both or neither. ``reorder_N_bad`` has N-1 set threads and one check thread
(SCTBench's ``reorder_bad.c`` with ``iSet`` = N-1, ``iCheck`` = 1), started in
that order: the check must run between one writer's two writes, yet it is
started last, so the bug needs a preemption of the writer and is harder to hit
by chance the more writers come first.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass

from shmstress.bench.sctbench._shared import Cell

I_CHECK = 1


@dataclass(frozen=True)
class Globals:
    a: Cell
    b: Cell


def set_thread(g: Globals) -> None:
    g.a.value = 1
    g.b.value = -1  # BAD: W/W data race


def check_thread(g: Globals) -> None:
    if not ((g.a.value == 0 and g.b.value == 0) or (g.a.value == 1 and g.b.value == -1)):
        raise AssertionError("reorder_bad: a and b seen half-written")  # BAD


def _main(i_set: int) -> None:
    a = mp.Value("i", 0, lock=False)
    b = mp.Value("i", 0, lock=False)
    g = Globals(a, b)
    set_pool = [mp.Process(target=set_thread, args=(g,)) for _ in range(i_set)]
    check_pool = [mp.Process(target=check_thread, args=(g,)) for _ in range(I_CHECK)]
    for t in set_pool + check_pool:
        t.start()
    for t in set_pool + check_pool:
        t.join()


def reorder_3_bad() -> None:
    _main(2)


def reorder_4_bad() -> None:
    _main(3)


def reorder_5_bad() -> None:
    _main(4)


def reorder_10_bad() -> None:
    _main(9)
