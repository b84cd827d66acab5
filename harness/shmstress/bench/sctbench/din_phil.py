"""SCTBench ``din_phil2_sat`` ... ``din_phil7_sat`` and their ``_unsat`` twins: dining
philosophers.

Philosopher ``id`` takes fork ``(id+1)%N`` then fork ``id``. In ``_sat`` each
then counts itself in ``phil`` (unlocked) and the one that brings it to N
asserts false: every execution in which all eat and no increment is lost fails
on that assert; the others are the circular wait, a deadlock. ``_unsat`` has no
assert, but the same circular wait: under controlled scheduling it is not clean,
it can deadlock (SCTBench's C code can too). The ``__ESBMC_atomic_begin``/``_end``
markers are taken as no-ops and left out (``din_phil7_sat`` calls begin three
times and end once; README.md says more).
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Lock

from shmstress.bench.sctbench._shared import Cell

SIZES = range(2, 8)


@dataclass(frozen=True)
class Globals:
    n: int  # the #define N
    x: tuple[Lock, ...]
    phil: Cell


def _eat(g: Globals, philosopher: int) -> None:
    left = philosopher
    right = (philosopher + 1) % g.n
    g.x[right].acquire()
    g.x[left].acquire()
    g.x[left].release()
    g.x[right].release()


def thread1_sat(g: Globals, philosopher: int) -> None:
    _eat(g, philosopher)
    g.phil.value += 1
    if g.phil.value == g.n:
        raise AssertionError(f"din_phil{g.n}_sat: assert(0) once phil == N")  # BAD


def thread1_unsat(g: Globals, philosopher: int) -> None:
    _eat(g, philosopher)


def _main(n: int, sat: bool) -> None:
    x = tuple(mp.Lock() for _ in range(n))
    phil = mp.Value("i", 0, lock=False)
    g = Globals(n, x, phil)
    target = thread1_sat if sat else thread1_unsat
    threads = [mp.Process(target=target, args=(g, i)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def din_phil2_sat() -> None:
    _main(2, sat=True)


def din_phil3_sat() -> None:
    _main(3, sat=True)


def din_phil4_sat() -> None:
    _main(4, sat=True)


def din_phil5_sat() -> None:
    _main(5, sat=True)


def din_phil6_sat() -> None:
    _main(6, sat=True)


def din_phil7_sat() -> None:
    _main(7, sat=True)


def din_phil2_unsat() -> None:
    _main(2, sat=False)


def din_phil3_unsat() -> None:
    _main(3, sat=False)


def din_phil4_unsat() -> None:
    _main(4, sat=False)


def din_phil5_unsat() -> None:
    _main(5, sat=False)


def din_phil6_unsat() -> None:
    _main(6, sat=False)


def din_phil7_unsat() -> None:
    _main(7, sat=False)
