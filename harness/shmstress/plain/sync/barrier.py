"""``multiprocessing.Barrier``: arrivals and a generation; the last arrival lets all pass."""

from __future__ import annotations

import threading
from collections.abc import Callable

from shmstress.plain.board import O_BROKEN, O_COUNT, O_GENERATION, O_LIMIT, Kind, Wait
from shmstress.plain.sync.base import Primitive

PLUMBING = True


class Barrier(Primitive):
    _kind = Kind.BARRIER
    _word = "barrier"

    def __init__(
        self, parties: int, action: Callable[[], object] | None = None,
        timeout: float | None = None, *, ctx: object = None,
    ) -> None:
        super().__init__()
        self._set(O_LIMIT, parties)
        self._action = action
        self._timeout = timeout

    def wait(self, timeout: float | None = None) -> int:
        runtime = self._runtime
        runtime.point(f"arrive at {self.name}")
        if self._get(O_BROKEN):
            raise threading.BrokenBarrierError
        index = self._get(O_COUNT)
        generation = self._get(O_GENERATION)
        if index + 1 == self._get(O_LIMIT):
            if self._action is not None:
                self._action()
            self._set(O_COUNT, 0)
            self._set(O_GENERATION, generation + 1)
            runtime.wake()
            return index
        self._set(O_COUNT, index + 1)
        timeout = self._timeout if timeout is None else timeout
        runtime.point(f"pass {self.name}", Wait.BARRIER, self._obj, arg=generation,
                      timeout=timeout)
        if self._get(O_GENERATION) == generation:  # timed out, or broken meanwhile
            self._set(O_BROKEN, 1)
            runtime.wake()
            raise threading.BrokenBarrierError
        return index

    def abort(self) -> None:
        self._runtime.point(f"abort {self.name}")
        self._set(O_BROKEN, 1)
        self._runtime.wake()

    def reset(self) -> None:
        self._runtime.point(f"reset {self.name}")
        if self._get(O_COUNT):
            self._set(O_BROKEN, 1)  # those waiting now get BrokenBarrierError, as documented
            self._runtime.wake()
        self._set(O_COUNT, 0)

    @property
    def parties(self) -> int:
        return self._get(O_LIMIT)

    @property
    def n_waiting(self) -> int:
        return self._get(O_COUNT)

    @property
    def broken(self) -> bool:
        return bool(self._get(O_BROKEN))
