"""A lock class of the user's own, declared to shmstress with one call.

``LockFile`` is an inter-process lock as small libraries make them: the lock is a file
that exists, made with ``O_EXCL`` and removed to let go; a waiter polls. shmstress does
not know it: undeclared, its polling is sleeps and its exclusion is the file system's.
Declared (``shmstress.testing.declare_lock``), its ``acquire`` and ``release`` are steps
with a wait the scheduler knows, and a process blocked on it is reported with the holder
and where the holder took it.

The counter the processes share is an anonymous shared ``mmap`` made at import: every
process forked after shares it, and it is restored before each execution.
"""

from __future__ import annotations

import _thread
import mmap
import os
import time
from collections.abc import Callable
from multiprocessing import Process

import shmstress.testing

PREFIX = os.environ.get("SHMSTRESS_TESTS_PREFIX", "shmstress_tests_")  # tests/conftest.py

LOCK_PATH = f"/dev/shm/{PREFIX}declared.lock"


class LockFile:
    def __init__(self, path: str) -> None:
        self.path = path

    def acquire(self, blocking: bool = True) -> bool:
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                if not blocking:
                    return False
                time.sleep(0.001)
                continue
            os.close(fd)
            return True

    def release(self) -> None:
        os.unlink(self.path)

    def __enter__(self) -> LockFile:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


shmstress.testing.declare_lock(LockFile, key=lambda lock: lock.path)

COUNTER = mmap.mmap(-1, 8)


def _read() -> int:
    return int.from_bytes(COUNTER[0:8], "little")


def _write(value: int) -> None:
    COUNTER[0:8] = value.to_bytes(8, "little")


# -- the users' code ----------------------------------------------------------------------------
def add_racy() -> None:
    lock = LockFile(LOCK_PATH)
    with lock:
        n = _read()
    with lock:
        _write(n + 1)


def add_locked() -> None:
    lock = LockFile(LOCK_PATH)
    with lock:
        _write(_read() + 1)


def _twice(work: Callable[[], None]) -> int:
    workers = [Process(target=work) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return _read()


def racy() -> None:
    n = _twice(add_racy)
    assert n == 2, f"2 increments, counter is {n}"


def locked() -> None:
    n = _twice(add_locked)
    assert n == 2, f"2 increments, counter is {n}"


def take_it() -> None:
    guard = LockFile(LOCK_PATH)
    guard.acquire()


def held_while_joining() -> None:
    """Main holds the lock and joins a child that waits for it: a deadlock."""
    guard = LockFile(LOCK_PATH)
    guard.acquire()
    child = Process(target=take_it)
    child.start()
    child.join()
    guard.release()


def unchangeable_class() -> None:
    """A C extension's class that can be neither changed nor subclassed is refused."""
    try:
        shmstress.testing.declare_lock(_thread.LockType)
    except TypeError as refused:
        assert "declare its objects instead" in str(refused), str(refused)
    else:
        raise AssertionError("declaring _thread.LockType was not refused")


def declared_object() -> None:
    """One object declared: the stand-in is the lock, the object's attributes are there."""
    guard = shmstress.testing.declare_lock(LockFile(f"/dev/shm/{PREFIX}declared.b"),
                                           name="guard")
    assert guard.path.endswith("declared.b")
    child = Process(target=_bump_under, args=(guard,))
    child.start()
    with guard:
        _write(_read() + 1)
    child.join()
    assert _read() == 2, f"2 increments, counter is {_read()}"


def _bump_under(guard: LockFile) -> None:
    with guard:
        _write(_read() + 1)


def plain_loop(scenario: Callable[[], None], runs: int) -> int:
    """How many of ``runs`` plain runs (no shmstress) of ``scenario`` fail."""
    failed = 0
    for _ in range(runs):
        _write(0)
        try:
            scenario()
        except AssertionError:
            failed += 1
    return failed
