"""A small library in the shape of real ones: a dict kept in an ``mmap`` of a ``/dev/shm``
file, every access under an ``fcntl.flock`` of that file.

``MmapDict`` stores the dict as JSON behind a length word. Each ``d[key]`` and
``d[key] = value`` takes the lock, reads (and writes) the block, and lets the lock go, so
``d["n"] = d["n"] + 1`` from two processes is a read under the lock and a write under
the lock, with room for the other process in between: an update is lost. The library's
own ``increment`` holds the lock across both.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import mmap
import os
from collections.abc import Callable, Iterator
from multiprocessing import Process
from typing import Any

PREFIX = os.environ.get("SHMSTRESS_TESTS_PREFIX", "shmstress_tests_")  # tests/conftest.py

PATH = f"/dev/shm/{PREFIX}mmap_dict"
SIZE = 4096


class MmapDict:
    def __init__(self, path: str, create: bool = False) -> None:
        flags = os.O_RDWR | (os.O_CREAT | os.O_TRUNC if create else 0)
        self._fd = os.open(path, flags, 0o600)
        if create:
            os.ftruncate(self._fd, SIZE)
        self._mm = mmap.mmap(self._fd, SIZE)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _load(self) -> dict[str, Any]:
        length = int.from_bytes(self._mm[0:4], "little")
        return json.loads(self._mm[4:4 + length]) if length else {}

    def _store(self, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self._mm[4:4 + len(raw)] = raw
        self._mm[0:4] = len(raw).to_bytes(4, "little")

    def __getitem__(self, key: str) -> Any:
        with self._locked():
            return self._load()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        with self._locked():
            data = self._load()
            data[key] = value
            self._store(data)

    def increment(self, key: str) -> int:
        with self._locked():
            data = self._load()
            data[key] = data.get(key, 0) + 1
            self._store(data)
            return int(data[key])

    def close(self) -> None:
        self._mm.close()
        os.close(self._fd)


# -- the users' code ----------------------------------------------------------------------------
def add_one_racy() -> None:
    d = MmapDict(PATH)
    d["n"] = d["n"] + 1
    d.close()


def add_one_locked() -> None:
    d = MmapDict(PATH)
    d.increment("n")
    d.close()


def _twice(work: Callable[[], None]) -> int:
    d = MmapDict(PATH, create=True)
    d["n"] = 0
    workers = [Process(target=work) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    n = d["n"]
    d.close()
    os.unlink(PATH)
    return int(n)


def racy() -> None:
    n = _twice(add_one_racy)
    assert n == 2, f"2 increments, n is {n}"


def locked() -> None:
    n = _twice(add_one_locked)
    assert n == 2, f"2 increments, n is {n}"
