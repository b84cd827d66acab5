"""``multiprocessing.Event``: a flag; ``wait`` parks until it is set."""

from __future__ import annotations

from shmstress.plain.board import O_COUNT, Kind, Wait
from shmstress.plain.sync.base import Primitive

PLUMBING = True


class Event(Primitive):
    _kind = Kind.EVENT
    _word = "event"

    def __init__(self, *, ctx: object = None) -> None:
        super().__init__()

    def is_set(self) -> bool:
        step = self._runtime.point(f"check {self.name}")
        flag = bool(self._get(O_COUNT))
        self._runtime.note(step, flag)
        return flag

    def set(self) -> None:
        self._runtime.point(f"set {self.name}")
        self._set(O_COUNT, 1)
        self._runtime.wake()

    def clear(self) -> None:
        self._runtime.point(f"clear {self.name}")
        self._set(O_COUNT, 0)

    def wait(self, timeout: float | None = None) -> bool:
        runtime = self._runtime
        runtime.point(f"wait for {self.name}", Wait.EVENT, self._obj, timeout=timeout)
        flag = bool(self._get(O_COUNT))
        if not flag:
            if timeout is None:
                raise RuntimeError(f"shmstress: {self.name} is waited for while the scenario's "
                                   "module is imported; the wait would last forever")
            runtime.yielded = 1
        return flag
