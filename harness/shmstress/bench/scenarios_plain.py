"""Plain ``multiprocessing`` scenarios for ``shmstress bench`` (no shmstress import here).

They live in the package, not in ``examples/``, so that an installed shmstress
can measure itself. ``racy`` and ``locked`` are ``examples/plain/counter.py``'s
two scenarios; ``locked_many`` repeats the locked increment so that one
execution has about a thousand steps: its steps/s measure the cost of a step,
not the fork of each execution's processes. ``started_few`` and ``started_many``
start processes that do nothing: the cost of one more process. ``ThreadCounter`` is the
same lost update with threads, as Frontrun's README writes it, for the side-by-side.

The bench runs a copy of this file from a temporary folder: ``--trace`` never
traces code inside the shmstress package (that is its own machinery).
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multiprocessing.sharedctypes import Synchronized

WORKERS = 2
INCREMENTS = 100
FEW, MANY = 2, 6
"""Processes ``started_few`` and ``started_many`` start: what one more costs is the difference
of their execution times over ``MANY - FEW``."""
"""Per process in ``locked_many``: with its acquire, read, write and release, an
execution takes about ``WORKERS * INCREMENTS * 5`` steps."""


def increment(counter: Synchronized[int]) -> None:
    counter.value += 1  # a read step, then a write step


def increment_locked(counter: Synchronized[int]) -> None:
    with counter.get_lock():
        counter.value += 1


def increment_locked_many(counter: Synchronized[int]) -> None:
    for _ in range(INCREMENTS):
        with counter.get_lock():
            counter.value += 1


def _run(target: Callable[[Synchronized[int]], None], expected: int) -> None:
    counter: Synchronized[int] = mp.Value("i", 0)
    workers = [mp.Process(target=target, args=(counter,)) for _ in range(WORKERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.value == expected, f"{expected} increments, counter is {counter.value}"


def racy() -> None:
    _run(increment, WORKERS)


def locked() -> None:
    _run(increment_locked, WORKERS)


def locked_many() -> None:
    _run(increment_locked_many, WORKERS * INCREMENTS)


def _return() -> None:
    """A process that does nothing: its cost is the start, the join and the exit alone."""


def _start_and_join(count: int) -> None:
    workers = [mp.Process(target=_return) for _ in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def started_few() -> None:
    _start_and_join(FEW)


def started_many() -> None:
    _start_and_join(MANY)


class ThreadCounter:
    """``racy`` with threads: the read and the write back are two statements."""

    def __init__(self) -> None:
        self.value = 0

    def increment(self) -> None:
        temp = self.value
        self.value = temp + 1
