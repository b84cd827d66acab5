"""SCTBench ``stack_bad`` and ``stack_ok``: a pusher and a popper of a shared stack.

``_bad``: once the pusher has set ``flag`` the popper pops on each of its passes,
asserting the stack is not empty; two pops between pushes underflow it. ``_ok``
pops only when ``top > 0``.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Lock

from shmstress.bench.sctbench._shared import Cell, Cells

SIZE = 10
OVERFLOW = -1
UNDERFLOW = -2


@dataclass(frozen=True)
class Globals:
    top: Cell
    arr: Cells  # static unsigned int arr[SIZE]
    m: Lock
    flag: Cell


def inc_top(g: Globals) -> None:
    g.top.value += 1


def dec_top(g: Globals) -> None:
    g.top.value -= 1


def get_top(g: Globals) -> int:
    return g.top.value


def push(g: Globals, stack: Cells, x: int) -> int:
    if g.top.value == SIZE:
        return OVERFLOW
    stack[get_top(g)] = x
    inc_top(g)
    return 0


def pop_bad(g: Globals, stack: Cells) -> int:
    if get_top(g) == 0:
        return UNDERFLOW
    dec_top(g)
    return stack[get_top(g)]


def pop_ok(g: Globals, stack: Cells) -> int:
    if g.top.value == 0:
        return UNDERFLOW
    dec_top(g)
    return stack[get_top(g)]


def t1_bad(g: Globals) -> None:
    for i in range(SIZE):
        with g.m:
            assert push(g, g.arr, i) != OVERFLOW
            g.flag.value = 1


def t2_bad(g: Globals) -> None:
    for _ in range(SIZE):
        with g.m:
            if g.flag.value:
                assert pop_bad(g, g.arr) != UNDERFLOW, "stack_bad: pop(arr) != UNDERFLOW"  # BAD


def t1_ok(g: Globals) -> None:
    for i in range(SIZE):
        with g.m:
            assert push(g, g.arr, i) != OVERFLOW


def t2_ok(g: Globals) -> None:
    for _ in range(SIZE):
        with g.m:
            if g.top.value > 0:
                pop_ok(g, g.arr)


def _main(bad: bool) -> None:
    top = mp.Value("i", 0, lock=False)
    arr = mp.Array("I", SIZE, lock=False)
    m = mp.Lock()
    flag = mp.Value("i", 0, lock=False)
    g = Globals(top, arr, m, flag)
    id1 = mp.Process(target=t1_bad if bad else t1_ok, args=(g,))
    id2 = mp.Process(target=t2_bad if bad else t2_ok, args=(g,))
    id1.start()
    id2.start()
    id1.join()
    id2.join()


def stack_bad() -> None:
    _main(bad=True)


def stack_ok() -> None:
    _main(bad=False)
