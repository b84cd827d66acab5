"""``multiprocessing.Semaphore`` and ``BoundedSemaphore``: a count, a point at each operation."""

from __future__ import annotations

from types import TracebackType

from shmstress.plain.board import O_COUNT, O_LIMIT, Kind, Wait
from shmstress.plain.sync.base import Primitive

PLUMBING = True


class Semaphore(Primitive):
    _kind = Kind.SEMAPHORE
    _word = "semaphore"

    def __init__(self, value: int = 1, *, ctx: object = None) -> None:
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        super().__init__()
        self._set(O_COUNT, value)
        self._set(O_LIMIT, value if self._kind == Kind.BOUNDED_SEMAPHORE else -1)

    def acquire(self, block: bool = True, timeout: float | None = None) -> bool:
        runtime = self._runtime
        if not block:
            runtime.point(f"try to acquire {self.name}")
        else:
            runtime.point(f"acquire {self.name}", Wait.SEMAPHORE, self._obj,
                          timeout=timeout)
        count = self._get(O_COUNT)
        if count > 0:
            self._set(O_COUNT, count - 1)
            return True
        if block and not runtime.scheduled:
            raise RuntimeError(f"shmstress: {self.name} is at zero while the scenario's module "
                               "is imported; an acquire there would wait forever")
        runtime.yielded = 1
        return False

    def release(self) -> None:
        self._runtime.point(f"release {self.name}")
        count = self._get(O_COUNT)
        limit = self._get(O_LIMIT)
        if limit >= 0 and count >= limit:
            raise ValueError("semaphore or lock released too many times")
        self._set(O_COUNT, count + 1)
        self._runtime.wake()

    def get_value(self) -> int:
        step = self._runtime.point(f"read the value of {self.name}")
        value = self._get(O_COUNT)
        self._runtime.note(step, value)
        return value

    __enter__ = acquire

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


class BoundedSemaphore(Semaphore):
    _kind = Kind.BOUNDED_SEMAPHORE
    _word = "semaphore"
