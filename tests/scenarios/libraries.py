"""A real, published shared-memory library driven as plain code: shared-memory-dict 0.7.2.

Two processes each set their own key of one ``SharedMemoryDict``. Each ``__setitem__``
reads the whole dict out of the shared block, adds its key and writes the whole dict
back: a read-modify-write of the block, so with an unlucky interleaving one key is lost.
"""

import os
from multiprocessing import Process

from shared_memory_dict import SharedMemoryDict

PREFIX = os.environ.get("SHMSTRESS_TESTS_PREFIX", "shmstress_tests_")  # tests/conftest.py

NAME = f"{PREFIX}distinct_keys"
SIZE = 1024


def set_key(key):
    shared = SharedMemoryDict(name=NAME, size=SIZE)
    shared[key] = 1
    shared.cleanup()


def distinct_keys():
    shared = SharedMemoryDict(name=NAME, size=SIZE)
    writers = [Process(target=set_key, args=(key,)) for key in ("a", "b")]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    keys = sorted(shared.keys())
    shared.shm.unlink()
    shared.cleanup()
    assert keys == ["a", "b"], f"keys {keys}: a write was lost"
