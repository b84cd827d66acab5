"""How ``mmap`` behaves under shmstress: a file mapped at import, its methods as points."""

from __future__ import annotations

import mmap
import os
from multiprocessing import Process

PREFIX = os.environ.get("SHMSTRESS_TESTS_PREFIX", "shmstress_tests_")  # tests/conftest.py

PATH = f"/dev/shm/{PREFIX}mmap_import"

_fd = os.open(PATH, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.ftruncate(_fd, 16)
MAPPED = mmap.mmap(_fd, 16)  # made at import: restored before every execution
PRIVATE = mmap.mmap(-1, 16, flags=mmap.MAP_PRIVATE)  # the process's own: no points
_gone = mmap.mmap(-1, 4096)
_gone.close()  # closed at import: nothing to restore there


def _bump() -> None:
    MAPPED.seek(0)
    value = MAPPED.read_byte()
    MAPPED.seek(0)
    MAPPED.write_byte(value + 1)


def each_execution_starts_from_import() -> None:
    """The file's first byte is 0 at the start of every execution, though each one writes it
    (its writes reach the file, which the host maps too)."""
    PRIVATE.write(b"x")
    assert os.pread(_fd, 1, 0) == b"\0", f"the file starts at {os.pread(_fd, 1, 0)!r}"
    child = Process(target=_bump)
    child.start()
    child.join()
    _bump()
    assert os.pread(_fd, 1, 0) == b"\2", f"two increments, the file has {os.pread(_fd, 1, 0)!r}"
    assert MAPPED.find(b"\2", 0) == 0


def resized_and_closed() -> None:
    """A mapping made in the execution, grown, then closed: no point after, nothing left."""
    fd = os.open(PATH + ".grown", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.ftruncate(fd, 8)
    grown = mmap.mmap(fd, 8)
    grown.write(b"abcd")
    os.ftruncate(fd, 4096)
    grown.resize(4096)
    grown.move(4, 0, 4)
    grown.flush()
    assert grown[0:8] == b"abcdabcd", grown[0:8]
    grown.close()
    os.close(fd)
    os.unlink(PATH + ".grown")
