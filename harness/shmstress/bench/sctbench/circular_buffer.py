"""SCTBench ``circular_buffer_bad``: a receiver that checks each element against its own loop
index.

Sender and receiver take turns through the ``send``/``receive`` flags, under the
mutex; each makes N passes whether or not it is its turn. The receiver asserts
the element it removes equals its pass number, which holds only while the two
loops stay in step: a pass of the receiver that finds nothing to receive skips a
number.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Lock

from shmstress.bench.sctbench._shared import Cell, Cells

BUFFER_MAX = 10
N = 7
ERROR = -1


@dataclass(frozen=True)
class Globals:
    buffer: Cells  # static char buffer[BUFFER_MAX]
    first: Cell  # unsigned
    next: Cell  # unsigned
    buffer_size: Cell
    send: Cell
    receive: Cell
    m: Lock


def init_log(g: Globals, maximum: int) -> None:
    g.buffer_size.value = maximum
    g.next.value = 0
    g.first.value = 0


def remove_log_element(g: Globals) -> int:
    assert g.first.value >= 0  # unsigned: always true, as in the C code
    if g.next.value > 0 and g.first.value < g.buffer_size.value:
        g.first.value += 1
        return g.buffer[g.first.value - 1]
    return ERROR


def insert_log_element(g: Globals, b: int) -> int:
    if g.next.value < g.buffer_size.value and g.buffer_size.value > 0:
        g.buffer[g.next.value] = b
        g.next.value = (g.next.value + 1) % g.buffer_size.value
        assert g.next.value < g.buffer_size.value
    else:
        return ERROR
    return b


def t1(g: Globals) -> None:
    for i in range(N):
        with g.m:
            if g.send.value:
                insert_log_element(g, i)
                g.send.value = 0
                g.receive.value = 1


def t2(g: Globals) -> None:
    for i in range(N):
        with g.m:
            if g.receive.value:
                assert remove_log_element(g) == i, (  # BAD
                    "circular_buffer_bad: removeLogElement() == i")
                g.receive.value = 0
                g.send.value = 1


def circular_buffer_bad() -> None:
    buffer = mp.Array("b", BUFFER_MAX, lock=False)
    first = mp.Value("I", 0, lock=False)
    next_ = mp.Value("I", 0, lock=False)  # next
    buffer_size = mp.Value("i", 0, lock=False)
    send = mp.Value("i", 0, lock=False)
    receive = mp.Value("i", 0, lock=False)
    m = mp.Lock()
    g = Globals(buffer, first, next_, buffer_size, send, receive, m)
    init_log(g, 10)
    g.send.value = 1
    g.receive.value = 0
    id1 = mp.Process(target=t1, args=(g,))
    id2 = mp.Process(target=t2, args=(g,))
    id1.start()
    id2.start()
    id1.join()
    id2.join()
