"""``multiprocessing.Pipe``, its ``Connection``s and ``connection.wait``, under control.

A pipe is a channel per direction: a row of the object table (``Kind.PIPE``) named
after the end that receives from it, whose messages wait in the board's mailbox
(``sync/mailbox.py``), not in an OS pipe. ``send`` is one step, and the message is in
the channel once it is taken (no buffer to fill: no sender blocks while its reader is
parked); ``recv`` is one step that waits for a message (``Wait.MESSAGE``); ``poll``
looks, or waits as long as it is told. What the OS pipe would hold is modelled as a
wait, not as a block: a send into a one-way pipe (an OS pipe, 64 KiB) whose reader has
not taken enough of what is queued waits for it (``Wait.FLUSHED``), as the real send
blocks, so two processes that each send the other more than a pipe holds before
receiving deadlock here as they do for real. A two-way pipe is a socket pair, whose
room depends on the machine and on the sizes sent: its sends never wait.

End of file as the OS gives it: a channel knows which processes have an end open that
sends into it, and which one that receives from it (a bit a slot). A process started
inherits every end its parent has open, as a fork's child inherits descriptors
(``Board.inherit``); ``close`` gives one up, and so does a process that finishes. A
``recv`` on an empty channel no process can send into any more raises ``EOFError``; a
``send`` into one nobody can receive from raises ``BrokenPipeError``.

Pickling: an end pickles as its rows (the real one as its descriptor), so one sent in a
message arrives open in the process that receives it; rows mean the same in every
process of a session. ``connection.wait`` over ends and process sentinels is one step
that waits for any of them (``Wait.ANY``); over anything else it is the real one.
"""

from __future__ import annotations

import errno
import importlib
import sys
from collections.abc import Iterable, Sequence
from multiprocessing import BufferTooShort
from multiprocessing import connection as mp_connection
from multiprocessing import process as mp_process
from multiprocessing.reduction import ForkingPickler
from types import TracebackType
from typing import Any, ClassVar

from shmstress.core.errors import PlainLimitError
from shmstress.plain.board import (
    HANDLE_BITS,
    NOBODY,
    O_COUNT,
    O_PIPE_BYTES,
    O_RECEIVERS,
    O_SENDERS,
    O_STRIDE,
    P_STATE,
    P_STRIDE,
    PIPE_BYTES,
    WAITSET,
    Kind,
    State,
    Wait,
    handle_bit,
)
from shmstress.plain.runtime import PlainRuntime
from shmstress.plain.sync.mailbox import Mailbox
from shmstress.plain.sync.naming import end_names
from shmstress.plain.waits import anyone_with, wait_over

PLUMBING = True
_REAL_WAIT = mp_connection.wait


class Connection:
    """One end of a pipe, or a queue's reader or writer: the channel it receives from and
    the one it sends into (object rows, or NOBODY)."""

    _runtime: ClassVar[PlainRuntime]
    _mailbox: ClassVar[Mailbox]

    def __init__(self, receives: int, sends: int, name: str) -> None:
        self._receives = receives
        self._sends = sends
        self.name = name
        self._open = True
        self._hold(True)

    # -- the real API -----------------------------------------------------------------------
    def send(self, obj: Any) -> None:
        self._check(reading=False)
        data = ForkingPickler.dumps(obj)  # before the step, as the real one
        step = self._runtime.point(f"send on {self.name}")
        self._deliver(data)
        self._runtime.note(step, obj)
        self._flush()

    def send_bytes(self, buf: Any, offset: int = 0, size: int | None = None) -> None:
        self._check(reading=False)
        view = memoryview(buf).cast("B")
        if offset < 0:
            raise ValueError("offset is negative")
        if view.nbytes < offset:
            raise ValueError("buffer length < offset")
        if size is None:
            size = view.nbytes - offset
        elif size < 0:
            raise ValueError("size is negative")
        elif offset + size > view.nbytes:
            raise ValueError("buffer length < offset + size")
        data = bytes(view[offset: offset + size])
        self._runtime.point(f"send on {self.name}")
        self._deliver(data)
        self._flush()

    def recv(self) -> Any:
        self._check(reading=True)
        return ForkingPickler.loads(self._message(f"receive on {self.name}"))

    def recv_bytes(self, maxlength: int | None = None) -> bytes:
        self._check(reading=True)
        if maxlength is not None and maxlength < 0:
            raise ValueError("negative maxlength")
        data = self._message(f"receive on {self.name}")
        if maxlength is not None and len(data) > maxlength:
            self.close()  # as the real one, on a message longer than asked for
            raise OSError("bad message length")
        return data

    def recv_bytes_into(self, buf: Any, offset: int = 0) -> int:
        self._check(reading=True)
        with memoryview(buf) as view:
            room = view.itemsize * len(view)
            if offset < 0:
                raise ValueError("negative offset")
            if offset > room:
                raise ValueError("offset too large")
            data = self._message(f"receive on {self.name}")
            if room < offset + len(data):
                raise BufferTooShort(data)
            view.cast("B")[offset: offset + len(data)] = data
            return len(data)

    def poll(self, timeout: float | None = 0.0) -> bool:
        """Is there a message, or the end of the file? With a timeout (None: as long as it
        takes) this waits, as the real one does."""
        self._check(reading=True)
        runtime, row = self._runtime, self._receives
        if timeout is not None and timeout <= 0:
            step = runtime.point(f"poll {self.name}")
        else:
            step = runtime.point(f"poll {self.name}", Wait.MESSAGE, row, timeout=timeout)
        ready = wait_over(runtime.board, runtime.slot, Wait.MESSAGE, row, 0)
        if not ready and timeout is None and not runtime.scheduled:
            raise _forever(self.name)
        runtime.note(step, ready)
        return ready

    def close(self) -> None:
        if self._open:
            self._runtime.point(f"close {self.name}")
            self._drop()

    @property
    def closed(self) -> bool:
        return not self._open

    @property
    def readable(self) -> bool:
        return self._receives != NOBODY

    @property
    def writable(self) -> bool:
        return self._sends != NOBODY

    def fileno(self) -> int:
        raise OSError(f"shmstress: {self.name} is a pipe end under control, with no file "
                      "descriptor (multiprocessing.connection.wait takes it as it is)")

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_open", False) and _between_points(self._runtime):
            self._drop()

    def __reduce__(self) -> tuple[Any, tuple[int, int, str]]:
        if not self._open:
            raise OSError("handle is closed")
        return _rebuilt, (self._receives, self._sends, self.name)

    def __repr__(self) -> str:
        return f"<shmstress connection {self.name!r}{'' if self._open else ' closed'}>"

    # -- factories patched into multiprocessing.connection ----------------------------------
    @classmethod
    def pipe(cls, duplex: bool = True) -> tuple[Connection, Connection]:
        """``Pipe(duplex)``: ends named after the variables the line assigns them to."""
        first, second = end_names(sys._getframe(1))
        if not duplex:  # an OS pipe: what it holds is modelled (``_flush``)
            row, first_name = cls._channel(first, PIPE_BYTES)
            suffix = first_name[len(first):]  # "#2" when a second pipe took the same names
            return cls(row, NOBODY, first_name), cls(NOBODY, row, second + suffix)
        # a socket pair: what it holds depends on the machine and the sizes sent, so a
        # send never waits for its reader here
        row, first_name = cls._channel(first, 0)
        other, second_name = cls._channel(second, 0)
        return cls(row, other, first_name), cls(other, row, second_name)

    @classmethod
    def _channel(cls, name: str, pipe_bytes: int) -> tuple[int, str]:
        row, name = cls._runtime.new_object(Kind.PIPE, "pipe", name)
        cls._mailbox.open(row, pipe_bytes=pipe_bytes)
        return row, name

    @classmethod
    def wait(cls, object_list: Iterable[Any], timeout: float | None = None) -> list[Any]:
        """``multiprocessing.connection.wait``: ends and process sentinels, one step."""
        objects = list(object_list)
        entries = [_entry(obj) for obj in objects]
        if not cls._runtime.scheduled or any(entry is None for entry in entries):
            return list(_REAL_WAIT(objects, timeout))
        known = [entry for entry in entries if entry is not None]
        names = ", ".join(_entry_name(obj) for obj in objects)
        wait_for_any(cls._runtime, f"wait on {names}", known, timeout)
        return [obj for obj, entry in zip(objects, known, strict=True)
                if entry_ready(cls._runtime, entry)]

    # -- transitions (the caller has taken the step) ----------------------------------------
    def _deliver(self, data: bytes | memoryview) -> None:
        runtime, row = self._runtime, self._sends
        receivers = runtime.board.objects.mv[row * O_STRIDE + O_RECEIVERS]
        if runtime.scheduled and not anyone_with(runtime.board, receivers):
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        self._mailbox.post(row, data)
        runtime.wake()

    def _flush(self) -> None:
        """What the real send does after its message is in the mailbox: it returns only once
        the message is written into the OS pipe, which holds ``PIPE_BYTES``; a larger
        backlog waits for the reader (``Wait.FLUSHED``). A step only when it must wait."""
        runtime, row = self._runtime, self._sends
        board = runtime.board
        if (runtime.scheduled and board.objects.mv[row * O_STRIDE + O_PIPE_BYTES]
                and not wait_over(board, runtime.slot, Wait.FLUSHED, row, runtime.slot)):
            runtime.point(f"flush {self.name}", Wait.FLUSHED, row, arg=runtime.slot)

    def _take(self, label: str, block: bool = True,
              timeout: float | None = None) -> tuple[int, bytes | None]:
        """A step that takes the oldest message of the channel this end receives from,
        waiting for one if ``block`` (``timeout``: how long): (the step, the message, or
        None if there is none); EOFError at the end of the file."""
        runtime, row = self._runtime, self._receives
        step = runtime.point(label, Wait.MESSAGE if block else Wait.NOTHING, row,
                             timeout=timeout if block else None)
        data = self._take_now()
        if data is None and block:
            if timeout is None:  # only at import: in an execution the point waits for it
                raise _forever(self.name)
            runtime.yielded = 1  # timed out: the caller will likely try again
        return step, data

    def _take_now(self) -> bytes | None:
        """The oldest message, in the step just taken: None if there is none, EOFError if
        none can come any more."""
        runtime, row = self._runtime, self._receives
        if runtime.board.objects.mv[row * O_STRIDE + O_COUNT] == 0:
            if wait_over(runtime.board, runtime.slot, Wait.MESSAGE, row, 0):
                raise EOFError
            return None
        data = self._mailbox.take(row)
        runtime.wake()  # a bounded queue has room now
        return data

    def _message(self, label: str) -> bytes:
        _, data = self._take(label)
        assert data is not None  # a wait without a timeout ends with a message or EOFError
        return data

    def _hold(self, opening: bool) -> None:
        """This process opens (or gives up) its end: its bit in the channels' masks."""
        runtime = self._runtime
        objects = runtime.board.objects.mv
        bit = handle_bit(runtime.slot)
        if not opening and bit == 1 << HANDLE_BITS:
            return  # shared by the slots past the last bit: kept (never a false end of file)
        for row, field in ((self._receives, O_RECEIVERS), (self._sends, O_SENDERS)):
            if row != NOBODY:
                where = row * O_STRIDE + field
                objects[where] = objects[where] | bit if opening else objects[where] & ~bit

    def _drop(self) -> None:
        self._open = False
        self._hold(False)
        self._runtime.wake()  # an end of file may be there now

    def _check(self, reading: bool) -> None:
        if not self._open:
            raise OSError("handle is closed")
        if (self._receives if reading else self._sends) == NOBODY:
            raise OSError("connection is write-only" if reading else "connection is read-only")


def wait_for_any(runtime: PlainRuntime, label: str, entries: Sequence[int],
                 timeout: float | None) -> int:
    """One step that waits until a channel has a message (an entry: its row) or a process
    has finished (-1 - its slot), or ``timeout`` runs out; the step's index."""
    if len(entries) > WAITSET:
        raise PlainLimitError(f"a wait on {len(entries)} pipes and processes: shmstress "
                              f"waits on {WAITSET} at most")
    first = runtime.slot * WAITSET
    waitsets = runtime.board.waitsets.mv
    for index, entry in enumerate(entries):
        waitsets[first + index] = entry
    step = runtime.point(label, Wait.ANY, NOBODY, arg=len(entries), timeout=timeout)
    if not any(entry_ready(runtime, entry) for entry in entries):
        runtime.yielded = 1
    return step


def entry_ready(runtime: PlainRuntime, entry: int) -> bool:
    if entry >= 0:
        return wait_over(runtime.board, runtime.slot, Wait.MESSAGE, entry, 0)
    return bool(runtime.board.slots.mv[(-1 - entry) * P_STRIDE + P_STATE] == State.FINISHED)


def _entry(obj: Any) -> int | None:
    """What ``obj`` is in a waitset: an end's channel, a child's exit; None: not ours."""
    if isinstance(obj, Connection):
        return obj._receives if obj._receives != NOBODY else None
    if isinstance(obj, int):
        for child in vars(mp_process)["_children"]:
            popen = child._popen
            if popen is not None and getattr(popen, "sentinel", None) == obj:
                slot = getattr(popen, "_slot", -1)
                return -1 - slot if slot >= 0 else None
    return None


def _entry_name(obj: Any) -> str:
    if isinstance(obj, Connection):
        return obj.name
    for child in vars(mp_process)["_children"]:
        if child._popen is not None and getattr(child._popen, "sentinel", None) == obj:
            return f"the exit of {getattr(child._popen, 'name', child.name)}"
    return repr(obj)


def _between_points(runtime: PlainRuntime) -> bool:
    """Does this process own the board now (it may change a mask without a step)? Not
    while parked, nor, in free mode, without the step lock."""
    if not runtime.scheduled:
        return True
    if runtime.free is not None:
        return runtime.holding
    return bool(runtime.board.slots.mv[runtime.slot * P_STRIDE + P_STATE] == State.RUNNING)


def _forever(name: str) -> RuntimeError:
    return RuntimeError(f"shmstress: {name} is empty while the scenario's module is imported; "
                        "a wait there would last forever")


def _rebuilt(receives: int, sends: int, name: str) -> Connection:
    """An end unpickled in this process: open here too. The class is the one patched in
    as ``multiprocessing.connection.Pipe``'s owner, bound to this process's runtime."""
    pipe = vars(importlib.import_module("multiprocessing.connection"))["Pipe"]
    cls: type[Connection] = pipe.__self__
    return cls(receives, sends, name)
