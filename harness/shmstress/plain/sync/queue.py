"""``multiprocessing.Queue``, ``JoinableQueue`` and ``SimpleQueue``: a channel, steps.

A queue is one channel (``Kind.QUEUE``: a row of the object table) whose messages wait
in the board's mailbox. ``put`` is one step: the object is pickled (with
``ForkingPickler``, as the real one) before it, and is in the queue once the step is
taken; a bounded queue's put waits for room (``Wait.ROOM``). ``get`` is one step that
waits for a message (``Wait.MESSAGE``): a get on an empty queue is a wait the scheduler
knows, and a process that waits for ever is reported naming the queue, who put into it
last and who could still put.

The real Queue's feeder thread is folded into the put: no thread is started, so
nothing runs that the scheduler does not run, a replay takes the same steps, and one
process runs at a time. What that changes: the real put returns before its feeder has
pickled and written the object, so a change to the object right after the put, or an
``empty()`` or ``get_nowait()`` right after it (the "infinitesimal delay" the
``multiprocessing`` documentation warns of), can race with the feeder; here neither
can, so code that counts on there being no delay passes here and can fail for real. What the
feeder's OS pipe holds is still modelled: a process waits, at its end, for what it put
to fit in the pipe (``Queue``). Each queue has a reader and a writer end (``_reader``,
``_writer``: this engine's ``Connection``), which is what ``Pool``'s workers close and
``connection.wait`` takes.
"""

from __future__ import annotations

from multiprocessing import util
from multiprocessing.reduction import ForkingPickler
from queue import Empty, Full
from typing import Any, ClassVar, NoReturn

from shmstress.plain.board import (
    NOBODY,
    O_COUNT,
    O_LIMIT,
    O_STRIDE,
    O_UNFINISHED,
    PIPE_BYTES,
    Kind,
    Wait,
)
from shmstress.plain.runtime import PlainRuntime
from shmstress.plain.sync.base import inherited_only
from shmstress.plain.sync.connection import Connection
from shmstress.plain.sync.mailbox import Mailbox

PLUMBING = True


class _Channelled:
    """What the three queues share: the row, its two ends, a put and a get."""

    _runtime: ClassVar[PlainRuntime]
    _mailbox: ClassVar[Mailbox]
    _connection: ClassVar[type[Connection]]
    _word: ClassVar[str] = "queue"
    _counts_tasks: ClassVar[bool] = False  # a JoinableQueue's put adds a task to be done

    def __init__(self, maxsize: int = 0, name: str | None = None, piped: bool = True) -> None:
        """``piped=False``: a pool's own queue, read by a folded thread, which the real
        one never leaves unread: what its OS pipe holds is not modelled."""
        runtime = self._runtime
        self._row, self.name = runtime.new_object(Kind.QUEUE, self._word, name)
        self._mailbox.open(self._row, max(maxsize, 0), PIPE_BYTES if piped else 0)
        self._fields = runtime.board.objects.mv
        self._base = self._row * O_STRIDE
        self._reader = self._connection(self._row, NOBODY, self.name)
        self._writer = self._connection(NOBODY, self._row, self.name)

    def _put(self, obj: Any, block: bool = True, timeout: float | None = None) -> None:
        runtime = self._runtime
        data = ForkingPickler.dumps(obj)  # before the step, so a pickling error is the put's
        bounded = self._fields[self._base + O_LIMIT] > 0
        step = runtime.point(f"put to {self.name}", Wait.ROOM if bounded and block else
                             Wait.NOTHING, self._row, timeout=timeout if block else None)
        if bounded and self._count() >= self._fields[self._base + O_LIMIT]:
            if block and timeout is None:
                raise _forever(self.name, "full")
            runtime.yielded = int(block)
            raise Full
        self._writer._deliver(data)
        if self._counts_tasks:
            self._fields[self._base + O_UNFINISHED] += 1
        runtime.note(step, obj)

    def _get(self, block: bool = True, timeout: float | None = None) -> Any:
        step, data = self._reader._take(f"get from {self.name}", block, timeout)
        if data is None:
            raise Empty
        obj = ForkingPickler.loads(data)
        self._runtime.note(step, obj)
        return obj

    def _count(self) -> int:
        return int(self._fields[self._base + O_COUNT])

    def _read_size(self) -> int:
        step = self._runtime.point(f"read the size of {self.name}")
        count = self._count()
        self._runtime.note(step, count)
        return count

    def _close_ends(self) -> None:
        self._runtime.point(f"close {self.name}")
        for end in (self._reader, self._writer):
            if end._open:
                end._drop()

    def __reduce__(self) -> NoReturn:
        inherited_only(type(self).__name__)

    def __repr__(self) -> str:
        return f"<shmstress {type(self).__name__} {self.name!r} with {self._count()} items>"


class Queue(_Channelled):
    """The feeder thread the real put hands its object to writes it into the OS pipe, which
    holds 64 KiB; the process waits for its feeder when it ends (unless
    ``cancel_join_thread``) and in ``join_thread``. Both wait here for what it put to fit
    in the pipe (``Wait.FLUSHED``): a process that puts more than that into a queue its
    parent reads only after joining it deadlocks, as the real one does ("Joining
    processes that use queues", in the ``multiprocessing`` guidelines)."""

    def __init__(self, maxsize: int = 0, *, ctx: object = None, name: str | None = None,
                 piped: bool = True) -> None:
        super().__init__(maxsize, name, piped)
        self._maxsize = maxsize if maxsize > 0 else _SEM_VALUE_MAX
        self._closed = False
        self._feeder: tuple[int, util.Finalize] | None = None  # (slot, its flush at exit)

    def put(self, obj: Any, block: bool = True, timeout: float | None = None) -> None:
        self._check_open()
        self._put(obj, block, timeout)
        slot = self._runtime.slot
        if self._feeder is None or self._feeder[0] != slot:  # the first put here
            self._feeder = slot, util.Finalize(self, self._writer._flush, exitpriority=-5)

    def put_nowait(self, obj: Any) -> None:
        self.put(obj, False)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        self._check_open()
        return self._get(block, timeout)

    def get_nowait(self) -> Any:
        return self.get(False)

    def qsize(self) -> int:
        return self._read_size()

    def empty(self) -> bool:
        return self._read_size() == 0

    def full(self) -> bool:
        limit = int(self._fields[self._base + O_LIMIT])
        return limit > 0 and self._read_size() >= limit

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._close_ends()

    def join_thread(self) -> None:
        assert self._closed, f"Queue {self!r} not closed"
        if self._feeder is not None and self._feeder[0] == self._runtime.slot:
            self._feeder[1]()  # once: not again when the process ends

    def cancel_join_thread(self) -> None:
        if self._feeder is not None and self._feeder[0] == self._runtime.slot:
            self._feeder[1].cancel()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"Queue {self!r} is closed")


class JoinableQueue(Queue):
    """``task_done`` and ``join`` are a step each; ``join`` waits until every task put is
    marked done (``Wait.TASKS_DONE``)."""

    _word = "joinable queue"
    _counts_tasks = True

    def task_done(self) -> None:
        runtime = self._runtime
        runtime.point(f"task done on {self.name}")
        left = int(self._fields[self._base + O_UNFINISHED])
        if left <= 0:
            raise ValueError("task_done() called too many times")
        self._fields[self._base + O_UNFINISHED] = left - 1
        if left == 1:
            runtime.wake()

    def join(self) -> None:
        runtime = self._runtime
        runtime.point(f"join {self.name}", Wait.TASKS_DONE, self._row)
        if self._fields[self._base + O_UNFINISHED]:
            raise _forever(self.name, "not done")


class SimpleQueue(_Channelled):
    """No feeder: its put writes into the OS pipe itself, and waits while the pipe is full."""

    def __init__(self, *, ctx: object = None, name: str | None = None,
                 piped: bool = True) -> None:
        super().__init__(0, name, piped)

    def put(self, obj: Any) -> None:
        self._writer._check(reading=False)
        self._put(obj)
        self._writer._flush()

    def get(self) -> Any:
        self._reader._check(reading=True)
        return self._get()

    def empty(self) -> bool:
        return self._read_size() == 0

    def close(self) -> None:
        if self._reader._open or self._writer._open:
            self._close_ends()


_SEM_VALUE_MAX = 2_147_483_647  # the real unbounded Queue's maxsize


def _forever(name: str, what: str) -> RuntimeError:
    return RuntimeError(f"shmstress: {name} is {what} while the scenario's module is "
                        "imported; a wait there would last forever")
