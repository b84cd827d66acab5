"""Scenarios that do something shmstress does not control, each the way real code does it:
a C call writing into a segment through a raw address, a mapping made by C code, a thread.
None of them fails; each must still not end clean."""

import ctypes
import mmap
import multiprocessing as mp
import threading
from multiprocessing import shared_memory

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long)
_LIBC.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)


def _poke(name):
    block = shared_memory.SharedMemory(name=name)
    address = ctypes.addressof(ctypes.c_char.from_buffer(block.buf))
    ctypes.memmove(address + 3, b"\x07", 1)  # a C call behind the harness's back
    block.close()


def memmove_into_segment():
    block = shared_memory.SharedMemory(create=True, size=16)
    try:
        worker = mp.Process(target=_poke, args=(block.name,))
        worker.start()
        worker.join()
    finally:
        block.close()
        block.unlink()


def _map_in_c():
    size = 4096
    address = _LIBC.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE,
                         mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, -1, 0)
    ctypes.memset(address, 1, size)
    # still mapped when the process ends, as a C library's would be


def mapping_made_in_c():
    worker = mp.Process(target=_map_in_c)
    worker.start()
    worker.join()


def _log(lines):
    lines.append("done")


def thread_beside():
    lines = []
    helper = threading.Thread(target=_log, args=(lines,), name="log-flusher")
    helper.start()
    helper.join()
    assert lines == ["done"]


def _locked_write(name, lock):
    block = shared_memory.SharedMemory(name=name)
    with lock:
        block.buf[0] = block.buf[0] + 1
    block.close()


def segment_written_under_steps():
    """The twin: every write is a traced subscript, under a lock. Clean."""
    block = shared_memory.SharedMemory(create=True, size=16)
    lock = mp.Lock()
    try:
        workers = [mp.Process(target=_locked_write, args=(block.name, lock)) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert block.buf[0] == 2
    finally:
        block.close()
        block.unlink()
