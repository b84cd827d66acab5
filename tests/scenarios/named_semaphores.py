"""How ``posix_ipc``'s named semaphores behave under shmstress, one scenario a behaviour."""

from __future__ import annotations

import os
from multiprocessing import Process

import posix_ipc

PREFIX = os.environ.get("SHMSTRESS_TESTS_PREFIX", "shmstress_tests_")  # tests/conftest.py

NAME = f"/{PREFIX}named"
LEFT = f"/{PREFIX}left_at_zero"  # made outside the run, at 0, by the test


def adopted_at_zero() -> None:
    """A semaphore the run did not make is read from the OS, and never changed there."""
    left = posix_ipc.Semaphore(LEFT)
    try:
        left.acquire(0)
    except posix_ipc.BusyError:
        pass
    else:
        raise AssertionError("a semaphore at 0 was taken")
    left.release()
    assert left.value == 1


def _take() -> None:
    posix_ipc.Semaphore(NAME).acquire()


def waits_for_a_taker() -> None:
    """Main takes the semaphore and joins a child that waits for it: no progress."""
    lock = posix_ipc.Semaphore(NAME, posix_ipc.O_CREX, initial_value=1)
    lock.acquire()
    child = Process(target=_take)
    child.start()
    child.join()


def names_come_and_go() -> None:
    """O_CREX on a name in use fails; after unlink the name is gone, its handles work on."""
    first = posix_ipc.Semaphore(NAME, posix_ipc.O_CREX, initial_value=2)
    try:
        posix_ipc.Semaphore(NAME, posix_ipc.O_CREX)
    except posix_ipc.ExistentialError:
        pass
    else:
        raise AssertionError("O_CREX made a second semaphore of one name")
    with first:
        assert first.value == 1
    first.unlink()
    try:
        posix_ipc.Semaphore(NAME)
    except posix_ipc.ExistentialError:
        pass
    else:
        raise AssertionError("an unlinked name was opened")
    first.acquire(timeout=0.5)
    second = posix_ipc.Semaphore(NAME, posix_ipc.O_CREAT)  # a new one, at 0
    assert second.value == 0 and first.value == 1
    posix_ipc.unlink_semaphore(NAME)
