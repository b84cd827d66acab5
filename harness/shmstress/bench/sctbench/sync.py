"""SCTBench ``sync01_bad``/``_ok`` and ``sync02_bad``/``_ok``: producer and consumer on a
counter, two condition variables over one mutex.

``sync01_bad`` starts with ``num = 1`` and its consumer never decrements: the
producer waits for ``num == 0`` forever, in every schedule. ``sync02_bad`` starts
with ``num = 2``: the consumer takes both and leaves, the producer produces once
and then waits forever. The ``_ok`` twins start at 0 and consume what they
produce (``sync02_ok`` 20 times).

``pthread_cond_signal`` is called after the mutex is released; Python's
``notify`` needs the condition's lock, so each signal takes the mutex just for
the notify, still after the release.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Condition, Lock

from shmstress.bench.sctbench._shared import Cell

SYNC02_BAD_N = 2
SYNC02_OK_N = 20


@dataclass(frozen=True)
class Globals:
    num: Cell
    m: Lock
    empty: Condition
    full: Condition


def _globals(initial: int) -> Globals:
    num = mp.Value("i", 0, lock=False)
    m = mp.Lock()
    empty = mp.Condition(m)
    full = mp.Condition(m)
    g = Globals(num, m, empty, full)
    g.num.value = initial
    return g


def _signal(cv: Condition) -> None:
    with cv:
        cv.notify()


def producer_once(g: Globals) -> None:
    with g.m:
        while g.num.value > 0:
            g.empty.wait()  # BAD (sync01_bad): deadlock
        g.num.value += 1
    _signal(g.full)


def consumer_once_bad(g: Globals) -> None:
    with g.m:
        while g.num.value == 0:
            g.full.wait()
        # num-- is commented out in the C code
    _signal(g.empty)


def consumer_once_ok(g: Globals) -> None:
    with g.m:
        while g.num.value == 0:
            g.full.wait()
        g.num.value -= 1
    _signal(g.empty)


def producer(g: Globals, n: int) -> None:
    i = 0
    while i < n:
        with g.m:
            while g.num.value > 0:
                g.empty.wait()  # BAD (sync02_bad): deadlock
            g.num.value += 1  # produce
        _signal(g.full)
        i += 1


def consumer(g: Globals, n: int) -> None:
    j = 0
    while j < n:
        with g.m:
            while g.num.value == 0:
                g.full.wait()
            g.num.value -= 1  # consume
        _signal(g.empty)
        j += 1


def _run(g: Globals, first: mp.Process, second: mp.Process) -> None:
    first.start()
    second.start()
    first.join()
    second.join()


def sync01_bad() -> None:
    g = _globals(1)
    _run(g, mp.Process(target=producer_once, args=(g,)),
         mp.Process(target=consumer_once_bad, args=(g,)))


def sync01_ok() -> None:
    g = _globals(0)
    _run(g, mp.Process(target=producer_once, args=(g,)),
         mp.Process(target=consumer_once_ok, args=(g,)))


def sync02_bad() -> None:
    g = _globals(2)
    _run(g, mp.Process(target=producer, args=(g, SYNC02_BAD_N)),
         mp.Process(target=consumer, args=(g, SYNC02_BAD_N)))


def sync02_ok() -> None:
    g = _globals(0)
    _run(g, mp.Process(target=producer, args=(g, SYNC02_OK_N)),
         mp.Process(target=consumer, args=(g, SYNC02_OK_N)))
