"""A small key-value store in a shared-memory segment, in the shape of real ones: the
whole table is JSON in the segment, each ``store[key]`` reads and decodes it, each
``store[key] = value`` reads, decodes, changes, encodes and writes it back. Its users
write ``store["n"] = store["n"] + 1`` from several processes and lose updates.

Driven with nothing traced, it stands for a library shmstress does not see into: no
point inside ``__getitem__`` or ``__setitem__``."""

import json
import multiprocessing as mp
import os
from multiprocessing import shared_memory


class Store:
    def __init__(self, name, create=False, size=4096):
        self.shm = shared_memory.SharedMemory(name=name, create=create,
                                              size=size if create else 0)
        if create:
            self._write({})

    def _read(self):
        raw = bytes(self.shm.buf[: self.shm.size]).split(b"\0", 1)[0]
        return json.loads(raw or b"{}")

    def _write(self, data):
        blob = json.dumps(data).encode()
        self.shm.buf[: len(blob) + 1] = blob + b"\0"

    def __getitem__(self, key):
        return self._read()[key]

    def __setitem__(self, key, value):
        data = self._read()
        data[key] = value
        self._write(data)

    def close(self):
        self.shm.close()


def _bump(name):
    store = Store(name)
    store["n"] = store["n"] + 1
    store.close()


def racy():
    name = f"jsonstore-{os.getpid()}"
    store = Store(name, create=True)
    try:
        store["n"] = 0
        workers = [mp.Process(target=_bump, args=(name,)) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        total = store["n"]
    finally:
        store.close()
        store.shm.unlink()
    assert total == 2, f"2 increments, n is {total}"
