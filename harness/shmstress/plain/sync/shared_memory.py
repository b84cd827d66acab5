"""``shared_memory.SharedMemory`` and ``ShareableList`` made known to the run.

A ``SharedMemory`` is the real one, with two additions: its mapping is
registered as shared (so ``--trace`` makes points of the accesses to it, and a
segment created at import is restored before every execution), and its name
goes into the board's segment table, so a segment the scenario leaves behind
is unlinked after the execution instead of piling up in ``/dev/shm``. The
resource tracker is not involved: it would start a helper process in every
execution, and the segment table does its job.

``ShareableList`` item reads and writes are points, like an ``Array``'s.
"""

from __future__ import annotations

import ctypes
from multiprocessing import shared_memory
from typing import Any, ClassVar

from shmstress.core.errors import PlainLimitError
from shmstress.plain.board import Kind
from shmstress.plain.runtime import PlainRuntime

PLUMBING = True


class SharedMemory(shared_memory.SharedMemory):
    _runtime: ClassVar[PlainRuntime]

    def __init__(self, name: str | None = None, create: bool = False, size: int = 0) -> None:
        super().__init__(name, create, size)
        runtime = self._runtime
        if create:  # listed at once: a process killed from here on leaves nothing behind
            try:
                runtime.created_segment(self._name)  # type: ignore[attr-defined]
            except PlainLimitError:  # not listed, so not left either
                self.close()
                super().unlink()
                raise
        os_name: str = self._name  # type: ignore[attr-defined]
        entry, known = runtime.known_as(os_name, "segment", made=create)
        _, self._shm_label = runtime.new_object(Kind.VALUE, "segment", known)
        self._shm_address = 0
        if self.size:
            mapping = getattr(self, "_mmap")  # noqa: B009 - private in the stubs
            self._shm_address = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
            runtime.register_buffer(self._shm_address, self.size,
                                    runtime.memory_of(name=entry), known)

    def close(self) -> None:
        if getattr(self, "_shm_address", 0):
            self._runtime.unregister_buffer(self._shm_address)
            self._shm_address = 0
        super().close()

    def unlink(self) -> None:
        self._runtime.point(f"unlink {self._shm_label}")
        super().unlink()
        self._runtime.unlinked_segment(self._name)  # type: ignore[attr-defined]


class ShareableList(shared_memory.ShareableList[Any]):
    _runtime: ClassVar[PlainRuntime]

    def __init__(self, sequence: Any = None, *, name: str | None = None) -> None:
        super().__init__(sequence, name=name)
        _, self._shm_name = self._runtime.new_object(Kind.ARRAY, "list")
        self._shm_list = True
        if self._runtime.check is not None:  # it laid out its segment without a step
            self._runtime.check.refresh()

    def __getitem__(self, position: int) -> Any:
        step = self._runtime.point(f"read {self._shm_name}[]")
        value = super().__getitem__(position)
        self._runtime.note(step, value, position)
        return value

    def __setitem__(self, position: int, value: Any) -> None:
        step = self._runtime.point(f"write {self._shm_name}[]")
        super().__setitem__(position, value)
        self._runtime.note(step, value, position)
