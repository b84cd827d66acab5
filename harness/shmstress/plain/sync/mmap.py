"""``mmap.mmap`` made known to the run: a shared mapping is shared memory like a segment.

A mapping that other processes can see (``MAP_SHARED``, the default: of a file, in
``/dev/shm`` or elsewhere, or anonymous and inherited over a fork) has its buffer
registered, as a ``SharedMemory``'s is: subscripts and slices of it (``mm[i]``,
``mm[a:b] = data``, a ``struct.pack_into`` on its line, a numpy array over it) are
points under tracing, and a mapping made at import is restored before each execution.
Its methods that read or write the mapped bytes (``read``, ``read_byte``, ``readline``,
``find``, ``rfind``, ``write``, ``write_byte``, ``move``) and those that change the
mapping itself (``flush``, ``resize``, ``close``) are points themselves, whether or not
the code is traced; ``seek`` and ``tell`` move a position private to the object. A
private mapping (``MAP_PRIVATE``, ``ACCESS_COPY``) is the process's own memory: nothing
to control. ``multiprocessing``'s own mappings (its heap, ``SharedMemory``) are made
by the real class: they are registered where they are made.

Restoring a file-backed mapping made at import writes the bytes it had then back into
the mapping, which is the file: an execution's writes do not leak into the next one.
A mapping made in an execution maps what the file holds when it is made; the file is
the scenario's own, as any file it writes, and a scenario that keeps a file across
executions makes it afresh (truncates or writes its start) as the tests do. Restoring
it too would mean copying every file the run might map before each execution, which
the host cannot know in advance.
"""

from __future__ import annotations

import ctypes
import mmap
from typing import Any, ClassVar

from shmstress.plain.board import Kind
from shmstress.plain.runtime import PlainRuntime
from shmstress.plain.sync.identity import not_the_scenarios

PLUMBING = True
_REAL = mmap.mmap


class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.py_object),
                ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p),
                ("strides", ctypes.c_void_p), ("suboffsets", ctypes.c_void_p),
                ("internal", ctypes.c_void_p)]


def buffer_address(obj: Any) -> int:
    """Where ``obj``'s buffer starts in memory (read-only buffers too, which
    ``ctypes.c_char.from_buffer`` refuses)."""
    view = _PyBuffer()
    ctypes.pythonapi.PyObject_GetBuffer(ctypes.py_object(obj), ctypes.byref(view), 0)
    try:
        return int(view.buf or 0)
    finally:
        ctypes.pythonapi.PyBuffer_Release(ctypes.byref(view))


def forget_buffer(runtime: PlainRuntime, address: int) -> None:
    """The buffer at ``address`` is unmapped here: no longer shared, nor restored (the
    host would write into memory that is gone)."""
    runtime.shared_ranges = [r for r in runtime.shared_ranges if r[0] != address]
    manifest = runtime.manifest
    kept = [index for index, (start, _) in enumerate(manifest.buffers) if start != address]
    if len(kept) != len(manifest.buffers):
        manifest.buffers = [manifest.buffers[index] for index in kept]
        if manifest.saved:
            manifest.saved = [manifest.saved[index] for index in kept]


class SharedMapping(_REAL):
    """What ``mmap.mmap`` makes in a run."""

    _runtime: ClassVar[PlainRuntime]

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if not_the_scenarios(1):
            return _REAL(*args, **kwargs)  # the heap's arenas, SharedMemory: theirs to say
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, fileno: int, length: int, flags: int = mmap.MAP_SHARED,
                 prot: int = mmap.PROT_WRITE | mmap.PROT_READ,
                 access: int = mmap.ACCESS_DEFAULT, *args: Any, **kwargs: Any) -> None:
        self._shm_mapped = 0  # the registered address; 0: not shared
        if access == mmap.ACCESS_COPY or flags & mmap.MAP_PRIVATE:
            return
        runtime = self._runtime
        _, self._shm_label = runtime.new_object(Kind.VALUE, "mapping")
        self._register()

    def _register(self) -> None:
        size = len(self)
        if size:
            self._shm_mapped = buffer_address(self)
            self._runtime.register_buffer(self._shm_mapped, size)

    def _forget(self) -> None:
        if self._shm_mapped:
            forget_buffer(self._runtime, self._shm_mapped)
            self._shm_mapped = 0

    def _step(self, verb: str, of_bytes: bool = True) -> int:
        """A point, if the mapping is shared: one that reads or writes the bytes is labelled
        as an access to their array (``read mm[]``), as a traced subscript is."""
        if not self._shm_mapped:
            return -1
        return self._runtime.point(f"{verb} {self._shm_label}{'[]' if of_bytes else ''}")

    # -- reads --------------------------------------------------------------------------------
    def read(self, n: int | None = None) -> bytes:
        self._step("read")
        return super().read(n)

    def read_byte(self) -> int:
        step = self._step("read")
        value = super().read_byte()
        self._runtime.note(step, value, self.tell() - 1)
        return value

    def readline(self) -> bytes:
        self._step("read")
        return super().readline()

    def find(self, *args: Any) -> int:
        self._step("read")
        return super().find(*args)

    def rfind(self, *args: Any) -> int:
        self._step("read")
        return super().rfind(*args)

    # -- writes -------------------------------------------------------------------------------
    def write(self, data: Any) -> int:
        self._step("write")
        return super().write(data)

    def write_byte(self, value: int) -> None:
        step = self._step("write")
        index = self.tell()
        super().write_byte(value)
        self._runtime.note(step, value, index)

    def move(self, dest: int, src: int, count: int) -> None:
        self._step("write")
        super().move(dest, src, count)

    # -- the mapping itself ---------------------------------------------------------------------
    def flush(self, *args: Any) -> None:
        self._step("flush", of_bytes=False)
        super().flush(*args)

    def resize(self, newsize: int) -> None:
        shared = bool(self._shm_mapped)
        self._step("resize", of_bytes=False)
        self._forget()  # the mapping may move
        try:
            super().resize(newsize)
        finally:
            if shared:
                self._register()

    def close(self) -> None:
        self._step("close", of_bytes=False)
        self._forget()
        super().close()

    def __exit__(self, *args: Any) -> None:
        self.close()
