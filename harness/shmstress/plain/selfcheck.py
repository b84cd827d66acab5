"""The self-check: what a process did that shmstress does not control, noticed and named.

A clean search means something only if every access to shared state was a step. Code
shmstress does not see can break that silently: a C call or ``ctypes.memmove`` writing
into a segment, a library outside the traced code, a shared mapping the harness never
heard of, a thread the scheduler does not run. Fray and Lincheck were both seen passing
racy code they could not instrument; this module makes such a run say so.

* **Writes with no step.** Each buffer the run knows (a ``Value``, an ``Array``, a
  segment) has a checksum on the board, as the last step left it. At each of its points
  a process checksums the buffers it has mapped: one that changed, when the process's
  previous step was no write (``KEEPING_VERBS``), or once that write was
  done (``settle``: the element stored, the traced line that used the buffer over), was
  changed by code between those two points that took no step, and the gap names both.
  One process runs at a time, so the change is that process's. The checksums live on the
  board, keyed by the memory (a ``Value``'s object row, a segment's entry in the name
  table), so a segment two processes map is one buffer.
* **Mappings it does not know.** At its end a process reads ``/proc/self/maps`` (in some
  executions: ``scanned``): a
  shared, writable mapping that holds no registered buffer and is not the harness's
  own (mapped before the scenario was imported) is memory whose accesses are no steps.
* **Threads.** A thread started in an execution runs beside the scheduler, not under it.

Each is a row of the board's gap table; the coordinator turns rows into lines
(``session``), the search counts them, and ``shmstress test`` ends a run that saw any
with "not fully under control", exit 6, unless told to accept it.
"""

from __future__ import annotations

import ctypes
import enum
import os
import zlib
from dataclasses import dataclass, field

from shmstress.core.shm import SEGMENT_PREFIX
from shmstress.plain.board import (
    G_GAPS,
    G_SCAN_MAPS,
    GAP_FROM,
    GAP_KIND,
    GAP_SLOT,
    GAP_STRIDE,
    GAP_TO,
    GAP_WHAT,
    MAX_GAPS,
    Board,
)
from shmstress.record.recorder import Recorder

PLUMBING = True

KEEPING_VERBS = frozenset((
    "read", "acquire", "try", "release", "wait", "wake", "take", "notify", "join", "check",
    "start", "begin", "sleep", "yield", "poll", "put", "get", "send", "receive", "close",
    "open", "unlink", "arrive", "pass", "abort", "reset", "set", "clear", "flush", "task",
    "shut", "call", "kill", "terminate", "share"))
"""Steps whose label starts so change no shared buffer of the program (locks, channels,
processes, a manager's calls, whose state is the board's or a manager's store): after
one, memory must stay as it was. Any other step (``write``, a traced line's ``use``, an
atomic ``cas`` or ``add``, a verb an instrumentation adds) may change what it names,
until its access is done (``settle``): an unknown verb loosens the check, never makes
it cry wolf."""


class Gap(enum.IntEnum):
    """What the self-check saw outside control."""

    WRITE = 1  # a buffer changed in a step that writes nothing
    MAPPING = 2  # a shared, writable mapping shmstress does not know
    THREAD = 3  # a thread started in an execution


def writes(text: str) -> bool:
    return text.partition(" ")[0] not in KEEPING_VERBS


@dataclass
class _Watched:
    address: int
    view: memoryview
    memory: int  # its checksum's place on the board
    name: int  # string id of the name its steps use


def scanned(execution: int) -> bool:
    """Whether the self-check reads the mappings of execution ``execution`` (0-based): a
    read of ``/proc/self/maps`` costs 0.1-0.4 ms a process, a tenth of a short
    execution, and a program maps the same kinds of memory in most executions: the first
    eight, then one in 64."""
    return execution < 8 or execution % 64 == 0


def shared_mappings() -> list[tuple[int, int, str, tuple[str, str]]]:
    """(start, end, path, (device, inode)) of this process's shared, writable mappings."""
    found: list[tuple[int, int, str, tuple[str, str]]] = []
    try:
        fd = os.open("/proc/self/maps", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return found
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    except OSError:
        return found
    finally:
        os.close(fd)
    for line in b"".join(chunks).split(b"\n"):
        if b" rw-s " not in line:
            continue
        parts = line.decode("utf-8", "replace").split(maxsplit=5)
        start, _, end = parts[0].partition("-")
        path = parts[5].strip() if len(parts) > 5 else ""
        found.append((int(start, 16), int(end, 16), path, (parts[3], parts[4])))
    return found


def _not_data(path: str) -> bool:
    """A mapping that holds no data of the program: a POSIX semaphore's, or one of the
    harness's own segments made after the import (a manager's store: its every use is a
    step of its own)."""
    name = os.path.basename(path.removesuffix(" (deleted)"))
    return name.startswith(("sem.", SEGMENT_PREFIX))


@dataclass
class SelfCheck:
    """One process's self-check: the buffers it has mapped and its previous step."""

    board: Board
    recorder: Recorder
    own: frozenset[tuple[str, str]] = frozenset()  # the harness's mappings, by inode
    watched: list[_Watched] = field(default_factory=list)
    wrote: bool = False  # the process's previous step may write shared memory
    since: int = 0  # label id of the process's previous point

    def remember_own_mappings(self) -> None:
        """Before the scenario is imported: every shared mapping there is the harness's."""
        self.own = frozenset(inode for *_, inode in shared_mappings())

    def watch(self, address: int, size: int, memory: int, name: str) -> None:
        """Checksum the buffer from now on, as it is now."""
        if size <= 0 or memory < 0:
            return
        view = memoryview((ctypes.c_char * size).from_address(address)).cast("B")
        watched = _Watched(address, view, memory, self.recorder.intern(name))
        self.watched.append(watched)
        self.board.digests.mv[memory] = zlib.crc32(view)

    def forget(self, address: int) -> None:
        """The buffer is unmapped (a segment closed): reading it now would crash."""
        self.watched = [w for w in self.watched if w.address != address]

    def refresh(self) -> None:
        """A primitive wrote its own buffer without a step (a ``ShareableList``'s layout)."""
        digests = self.board.digests.mv
        for watched in self.watched:
            digests[watched.memory] = zlib.crc32(watched.view)

    def settle(self) -> None:
        """The write the previous step stands for is done (the ``Value`` written, the
        traced line over): what it changed is accepted, and from here on, up to the next
        point, nothing may change."""
        self.refresh()
        self.wrote = False

    def at_point(self, slot: int, site: int, writing: bool) -> None:
        """At a point, before it is taken: did the step that ends here change memory it
        should not have? Then this point's step becomes the previous one."""
        digests = self.board.digests.mv
        changed = -1
        for watched in self.watched:
            digest = zlib.crc32(watched.view)
            if digest != digests[watched.memory]:
                digests[watched.memory] = digest
                if changed < 0:
                    changed = watched.name
        if changed >= 0 and not self.wrote:
            self.record(Gap.WRITE, slot, changed, self.since, site)
        self.wrote = writing
        self.since = site

    def at_end(self, slot: int, ranges: list[tuple[int, int]]) -> None:
        """The process is done: its last step, and the mappings it made (``scanned``)."""
        self.at_point(slot, 0, False)
        if not self.board.globals.mv[G_SCAN_MAPS]:
            return
        for start, end, path, inode in shared_mappings():
            if inode in self.own or any(start <= low < end for low, _ in ranges) \
                    or _not_data(path):
                continue
            where = path or f"anonymous memory at {start:#x}"
            self.record(Gap.MAPPING, slot, self.recorder.intern(where), 0, 0)

    def record(self, kind: Gap, slot: int, what: int, since: int, site: int) -> None:
        """A row of the gap table; the same thing seen again in the execution is not."""
        globals_ = self.board.globals.mv
        gaps = self.board.gaps.mv
        count = int(globals_[G_GAPS])
        row = (int(kind), slot, what, since, site)
        for index in range(count):
            base = index * GAP_STRIDE
            if tuple(gaps[base: base + GAP_STRIDE]) == row:
                return
        if count >= MAX_GAPS:
            return
        base = count * GAP_STRIDE
        for offset, value in zip((GAP_KIND, GAP_SLOT, GAP_WHAT, GAP_FROM, GAP_TO), row,
                                 strict=True):
            gaps[base + offset] = value
        globals_[G_GAPS] = count + 1

    def thread_started(self, slot: int, name: str, site: int) -> None:
        self.record(Gap.THREAD, slot, self.recorder.intern(name), 0, site)

