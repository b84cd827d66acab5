"""How ``fcntl``'s file locks behave under shmstress, one scenario a behaviour."""

from __future__ import annotations

import fcntl
import os
import struct
from multiprocessing import Event, Process, Value

PREFIX = os.environ.get("SHMSTRESS_TESTS_PREFIX", "shmstress_tests_")  # tests/conftest.py

PATH = f"/dev/shm/{PREFIX}file_lock"
OTHER = f"/dev/shm/{PREFIX}file_lock_b"
OUTSIDE = f"/dev/shm/{PREFIX}file_lock_outside"


def _reader(mine: object, theirs: object) -> None:
    with open(PATH, "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_SH)
        mine.set()  # type: ignore[attr-defined]
        theirs.wait()  # type: ignore[attr-defined]  # both hold it shared at once
        fcntl.flock(lock_file, fcntl.LOCK_UN)


def shared_readers() -> None:
    """Two readers hold one flock shared together (exclusive, they would deadlock)."""
    first, second = Event(), Event()
    readers = [Process(target=_reader, args=(first, second)),
               Process(target=_reader, args=(second, first))]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    assert all(reader.exitcode == 0 for reader in readers)


def _try_exclusive(refused: object) -> None:
    with open(PATH, "a") as lock_file:
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            refused.value = 1  # type: ignore[attr-defined]


def writer_refused_while_read() -> None:
    """While main holds it shared, a LOCK_NB exclusive request raises BlockingIOError."""
    refused = Value("i", 0)
    with open(PATH, "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_SH)
        child = Process(target=_try_exclusive, args=(refused,))
        child.start()
        child.join()
    assert refused.value == 1, "LOCK_NB was not refused while the lock was held shared"


def _hold_then_close(closed: object, done: object) -> None:
    with open(PATH, "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
    closed.set()  # type: ignore[attr-defined]  # the file is closed: the lock is gone
    done.wait()  # type: ignore[attr-defined]


def closing_releases() -> None:
    """A lock whose file was closed (``with open(...)`` ended) is free for the others."""
    closed, done = Event(), Event()
    child = Process(target=_hold_then_close, args=(closed, done))
    child.start()
    closed.wait()
    with open(PATH, "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)  # would wait forever if the close were missed
        done.set()
    child.join()


def _hold_and_leave() -> None:
    lock_file = open(PATH, "a")  # noqa: SIM115 - left open on purpose: the exit closes it
    fcntl.lockf(lock_file, fcntl.LOCK_EX)


def exit_releases() -> None:
    """A process that exits holding a lockf lock lets it go."""
    child = Process(target=_hold_and_leave)
    child.start()
    child.join()
    with open(PATH, "a") as lock_file:
        fcntl.lockf(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _both(first: str, second: str) -> None:
    with open(first, "a") as one, open(second, "a") as two:
        fcntl.fcntl(one, fcntl.F_SETLKW, struct.pack("hhllhh", fcntl.F_WRLCK, 0, 0, 0, 0, 0))
        fcntl.lockf(two, fcntl.LOCK_EX)


def opposite_order() -> None:
    """Two processes take record locks on two files in opposite orders: a deadlock."""
    workers = [Process(target=_both, args=(PATH, OTHER)), Process(target=_both, args=(OTHER, PATH))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def outside() -> None:
    """The lock is held by a process outside the run (the test that starts it)."""
    with open(OUTSIDE, "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)


def prepare() -> None:
    for path in (PATH, OTHER):
        with open(path, "a"):
            pass


def clean() -> None:
    for path in (PATH, OTHER, OUTSIDE):
        if os.path.exists(path):
            os.unlink(path)
