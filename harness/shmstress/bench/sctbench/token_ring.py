"""SCTBench ``token_ring_bad``: three threads pass a value around; a fourth checks they agree.

Each of ``t1``..``t3`` copies its predecessor's value (``t1`` adds one, mod 4) and
raises its flag; ``t4`` asserts the three agree once all flags are up, which
fails unless they ran in one particular order. The ``__ESBMC_atomic_begin``/
``_end`` markers are taken as no-ops and left out (README.md says why).
The C main never joins its threads; the port does.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass

from shmstress.bench.sctbench._shared import Cell


@dataclass(frozen=True)
class Globals:
    x1: Cell
    x2: Cell
    x3: Cell
    flag1: Cell
    flag2: Cell
    flag3: Cell


def t1(g: Globals) -> None:
    g.x1.value = (g.x3.value + 1) % 4
    g.flag1.value = 1


def t2(g: Globals) -> None:
    g.x2.value = g.x1.value
    g.flag2.value = 1


def t3(g: Globals) -> None:
    g.x3.value = g.x2.value
    g.flag3.value = 1


def t4(g: Globals) -> None:
    if g.flag1.value and g.flag2.value and g.flag3.value:
        assert g.x1.value == g.x2.value and g.x2.value == g.x3.value, (  # BAD
            "token_ring_bad: x1 == x2 && x2 == x3")


def token_ring_bad() -> None:
    x1 = mp.Value("i", 0, lock=False)
    x2 = mp.Value("i", 0, lock=False)
    x3 = mp.Value("i", 0, lock=False)
    flag1 = mp.Value("i", 0, lock=False)
    flag2 = mp.Value("i", 0, lock=False)
    flag3 = mp.Value("i", 0, lock=False)
    g = Globals(x1, x2, x3, flag1, flag2, flag3)
    g.x1.value = 1
    g.x2.value = 2
    g.x3.value = 1
    threads = [mp.Process(target=f, args=(g,)) for f in (t1, t2, t3, t4)]
    for t in threads:
        t.start()
    for t in threads:  # the C main returns without joining
        t.join()
