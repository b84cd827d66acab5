"""SCTBench ``queue_bad`` and ``queue_ok``: a queue between an enqueuer and a dequeuer.

``_bad``: the enqueuer and the dequeuer take turns through two flags under the
mutex, each making a fixed number of passes; the dequeuer checks each element
against ``stored_elements[i]`` for its own pass ``i``, which is right only while
the passes stay in step. ``_ok``: each thread does all its work in one critical
section. (The module is ``queue_`` so as not to shadow the standard ``queue``.)

``queue_bad``'s C source is not in the stored copy of SCTBench this port was
written from; it follows Fray's line-by-line Java translation of it
(cmu-pasta/fray, which cites SCTBench's file): SIZE 20, values 0, 1, 2, ...
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.synchronize import Lock

from shmstress.bench.sctbench._shared import Cell, Cells

SIZE_BAD = 20
SIZE_OK = 40
EMPTY = -1
FULL = -2


@dataclass(frozen=True)
class QType:
    size: int  # the #define SIZE
    element: Cells
    head: Cell
    tail: Cell
    amount: Cell


@dataclass(frozen=True)
class Globals:
    m: Lock
    stored_elements: Cells
    enqueue_flag: Cell
    dequeue_flag: Cell
    queue: QType


def init(q: QType) -> None:
    q.head.value = 0
    q.tail.value = 0
    q.amount.value = 0


def empty(q: QType) -> int:
    if q.head.value == q.tail.value:
        return EMPTY
    return 0


def full(q: QType) -> int:
    if q.amount.value == q.size:
        return FULL
    return 0


def enqueue(q: QType, x: int) -> int:
    q.element[q.tail.value] = x
    q.amount.value += 1
    if q.tail.value == q.size:
        q.tail.value = 1
    else:
        q.tail.value += 1
    return 0


def dequeue(q: QType) -> int:
    x = q.element[q.head.value]
    q.amount.value -= 1
    if q.head.value == q.size:
        q.head.value = 1
    else:
        q.head.value += 1
    return x


def t1_bad(g: Globals) -> None:
    value = 0
    with g.m:
        assert enqueue(g.queue, value) == 0
        g.stored_elements[0] = value
        assert empty(g.queue) == 0
    for i in range(g.queue.size - 1):
        with g.m:
            if g.enqueue_flag.value:
                value += 1
                enqueue(g.queue, value)
                g.stored_elements[i + 1] = value
                g.enqueue_flag.value = 0
                g.dequeue_flag.value = 1


def t2_bad(g: Globals) -> None:
    for i in range(g.queue.size):
        with g.m:
            if g.dequeue_flag.value:
                assert dequeue(g.queue) == g.stored_elements[i], (  # BAD
                    "queue_bad: dequeue(&queue) == stored_elements[i]")
                g.dequeue_flag.value = 0
                g.enqueue_flag.value = 1


def t1_ok(g: Globals) -> None:
    value = 0
    with g.m:
        if g.enqueue_flag.value:
            for i in range(g.queue.size):
                value += 1
                enqueue(g.queue, value)
                g.stored_elements[i] = value
            g.enqueue_flag.value = 0
            g.dequeue_flag.value = 1


def t2_ok(g: Globals) -> None:
    with g.m:
        if g.dequeue_flag.value:
            for i in range(g.queue.size):
                if empty(g.queue) != EMPTY:
                    assert dequeue(g.queue) == g.stored_elements[i], (
                        "queue_ok: dequeue(&queue) == stored_elements[i]")
            g.dequeue_flag.value = 0
            g.enqueue_flag.value = 1


def _main(size: int, bad: bool) -> None:
    element = mp.Array("i", size, lock=False)
    head = mp.Value("i", 0, lock=False)
    tail = mp.Value("i", 0, lock=False)
    amount = mp.Value("i", 0, lock=False)
    queue = QType(size, element, head, tail, amount)
    m = mp.Lock()
    stored_elements = mp.Array("i", size, lock=False)
    enqueue_flag = mp.Value("i", 0, lock=False)
    dequeue_flag = mp.Value("i", 0, lock=False)
    g = Globals(m, stored_elements, enqueue_flag, dequeue_flag, queue)
    g.enqueue_flag.value = 1
    g.dequeue_flag.value = 0
    init(queue)
    assert empty(queue) == EMPTY
    id1 = mp.Process(target=t1_bad if bad else t1_ok, args=(g,))
    id2 = mp.Process(target=t2_bad if bad else t2_ok, args=(g,))
    id1.start()
    id2.start()
    id1.join()
    id2.join()


def queue_bad() -> None:
    _main(SIZE_BAD, bad=True)


def queue_ok() -> None:
    _main(SIZE_OK, bad=False)
