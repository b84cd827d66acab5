"""The board's mailbox: where the pickled messages of queues and pipes wait to be taken.

Why not the OS pipe the real ones use: its buffer is finite (64 KiB on Linux). A put of
a larger message, with the only process that would read it parked by the scheduler,
would block the one process that runs, and the run would hang. Here a put copies the
message into the board's shared memory in its step, whatever its size, and a get
copies it out in its own: nothing blocks but what the scheduler knows (``Wait``).

Each channel (a queue, or one direction of a pipe: a row of the object table) keeps
its messages as a list, oldest first, threaded through their headers (next, length,
sender);
its row holds the head, the tail and the count. Space comes off the top
(``G_MAIL_TOP``); taking the top message gives its space back, and taking the last
message put in the execution gives back everything above the messages put at import.
A pipeline or a request and its response reuse the same few pages.

Nothing of the mailbox is restored before an execution but what was put at import, in
the host: those messages lie below ``G_MAIL_BASE`` and are registered as import-time
buffers (restored by the host like a ``Value`` made at import); an execution writes
only above them (``G_MAIL_TOP`` comes back with the globals). So the size of the
mailbox costs no time per execution, and memory only where messages were written.
"""

from __future__ import annotations

import ctypes

from shmstress.core.errors import PlainLimitError
from shmstress.plain.board import (
    G_MAIL_BASE,
    G_MAIL_LIVE,
    G_MAIL_TOP,
    HOST,
    M_HEADER,
    M_NEXT,
    M_SENDER,
    M_SIZE,
    NOBODY,
    O_COUNT,
    O_HEAD,
    O_LIMIT,
    O_PIPE_BYTES,
    O_SENT_BY,
    O_STRIDE,
    O_TAIL,
    O_TAKEN_BY,
)
from shmstress.plain.runtime import PlainRuntime

PLUMBING = True


class Mailbox:
    """The runtime's view of the mailbox: post into a channel, take from it."""

    def __init__(self, runtime: PlainRuntime) -> None:
        self._runtime = runtime
        board = runtime.board
        self._words = board.mailbox.mv
        self._bytes = board.mailbox.mv.cast("B")
        self._objects = board.objects.mv
        self._globals = board.globals.mv

    def open(self, row: int, limit: int = 0, pipe_bytes: int = 0) -> None:
        """Make ``row`` (just created) an empty channel; ``limit``: a queue's maxsize;
        ``pipe_bytes``: what the OS pipe it stands for holds, if that is modelled."""
        objects, base = self._objects, row * O_STRIDE
        for field in (O_HEAD, O_TAIL, O_SENT_BY, O_TAKEN_BY):
            objects[base + field] = NOBODY
        objects[base + O_COUNT] = 0
        objects[base + O_LIMIT] = limit
        objects[base + O_PIPE_BYTES] = pipe_bytes

    def post(self, row: int, data: bytes | memoryview) -> None:
        """Append ``data`` to the channel (the caller has taken the step)."""
        runtime, words, globals_ = self._runtime, self._words, self._globals
        size = memoryview(data).nbytes
        need = M_HEADER + (size + 7) // 8
        top = int(globals_[G_MAIL_TOP])
        if top + need > len(words):
            raise PlainLimitError(
                f"a message of {size:,} bytes does not fit in the board's mailbox "
                f"({(top - int(globals_[G_MAIL_BASE])) * 8:,} of {len(words) * 8:,} bytes "
                "hold messages not yet taken; --mailbox-mib makes it larger)")
        sender = runtime.slot if runtime.scheduled else HOST
        words[top + M_NEXT] = NOBODY
        words[top + M_SIZE] = size
        words[top + M_SENDER] = sender
        start = (top + M_HEADER) * 8
        self._bytes[start: start + size] = memoryview(data).cast("B")
        objects, base = self._objects, row * O_STRIDE
        tail = int(objects[base + O_TAIL])
        if tail == NOBODY:
            objects[base + O_HEAD] = top
        else:
            words[tail + M_NEXT] = top
        objects[base + O_TAIL] = top
        objects[base + O_COUNT] += 1
        objects[base + O_SENT_BY] = sender
        globals_[G_MAIL_TOP] = top + need
        if runtime.scheduled:
            globals_[G_MAIL_LIVE] += 1
        else:  # put at import: kept for every execution
            globals_[G_MAIL_BASE] = top + need
            address = ctypes.addressof(ctypes.c_char.from_buffer(self._bytes, top * 8))
            runtime.register_buffer(address, need * 8, exposed=False)  # restored, unchecked

    def take(self, row: int) -> bytes:
        """Remove the channel's oldest message and return it (the caller has taken the step
        and seen that there is one)."""
        runtime, words, globals_ = self._runtime, self._words, self._globals
        objects, base = self._objects, row * O_STRIDE
        head = int(objects[base + O_HEAD])
        size = int(words[head + M_SIZE])
        start = (head + M_HEADER) * 8
        data = bytes(self._bytes[start: start + size])
        after = int(words[head + M_NEXT])
        objects[base + O_HEAD] = after
        if after == NOBODY:
            objects[base + O_TAIL] = NOBODY
        objects[base + O_COUNT] -= 1
        objects[base + O_TAKEN_BY] = runtime.slot if runtime.scheduled else HOST
        floor = int(globals_[G_MAIL_BASE])
        if head >= floor:  # put in this execution: its space can be given back
            live = int(globals_[G_MAIL_LIVE]) - 1
            globals_[G_MAIL_LIVE] = live
            if live == 0:
                globals_[G_MAIL_TOP] = floor
            elif head + M_HEADER + (size + 7) // 8 == globals_[G_MAIL_TOP]:
                globals_[G_MAIL_TOP] = head
        return data
