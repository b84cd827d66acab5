"""What every instrumented primitive has: its row in the object table, its name, its runtime."""

from __future__ import annotations

from typing import ClassVar, NoReturn

from shmstress.plain.board import HOST, O_COUNT, O_OWNER, O_STRIDE, Kind
from shmstress.plain.runtime import PlainRuntime

PLUMBING = True


class Primitive:
    """A row of the object table; subclasses bound to a runtime are what user code gets."""

    _runtime: ClassVar[PlainRuntime]
    _kind: ClassVar[Kind]
    _word: ClassVar[str]  # names an object whose creation line assigns it to nothing

    def __init__(self, name: str | None = None) -> None:
        self._obj, self.name = self._runtime.new_object(self._kind, self._word, name)
        self._fields = self._runtime.board.objects.mv
        self._base = self._obj * O_STRIDE

    def _get(self, field: int) -> int:
        return int(self._fields[self._base + field])

    def _set(self, field: int, value: int) -> None:
        self._fields[self._base + field] = value

    def _me(self) -> int:
        runtime = self._runtime
        return runtime.slot if runtime.scheduled else HOST

    def __reduce__(self) -> NoReturn:
        inherited_only(type(self).__name__)

    def __repr__(self) -> str:
        return (f"<shmstress {self._kind.name.lower()} {self.name!r} owner={self._get(O_OWNER)} "
                f"count={self._get(O_COUNT)}>")


def inherited_only(kind: str) -> NoReturn:
    """Pickling a lock, a value or a queue: refused as the real ones refuse it outside a
    process's start (fork is the start method here, so a start pickles nothing). Put into
    a queue, the real one fails on the feeder thread and the item is lost; here the put
    raises."""
    raise RuntimeError(f"{kind} objects should only be shared between processes through "
                       "inheritance")
