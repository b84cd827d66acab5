"""Named shared-memory segments and the int64 arrays trackers keep in them.

Segments are plain files in ``/dev/shm`` mapped with ``mmap``. We do not use
``multiprocessing.shared_memory`` because on Python < 3.13 it registers every
segment with the resource tracker, which starts an extra helper process that
outlives a test and unlinks segments behind our back.

Names, in ``/dev/shm`` (or ``$SHMSTRESS_SHM_DIR``):

- a segment: ``shmstress-<pid>-<start>-<token>-<n>``, the ``n``-th of its arena;
- a run's list of the segments its code under test created (``CreatedSegments``):
  ``shmstress-<pid>-<start>-<token>-created``;
- a named semaphore (``core.semaphores``): ``sem.shmstress-<pid>-<start>-sem-<token>-<n>``.

``<pid>`` is the owner's, so a sweeper can find what a coordinator that died left;
``<start>`` is when the owner started (clock ticks since boot, as /proc says; 0 when it
could not be read), so a name whose pid now belongs to an unrelated process, started
later, is stale too. ``<token>`` is 16 random hex digits, fresh for each name
(``core.unguessable``): pid and start time are public, and a name another user could
compute ahead could be squatted (the run's create fails) or planted as a symlink. Names of
earlier releases, ``shmstress-<pid>-<start>-<n>``, ``shmstress-<pid>-<n>`` and
``shmstress-<pid>-<start>-created``, are still read.

A segment's whole size is reserved when it is created (``posix_fallocate``): a file
system too full to hold it refuses the run there, in one line, instead of a worker dying
of SIGBUS at its first write to a page the file system cannot give.

The sweeper trusts only what is ours: a list or a segment is read, or unlinked, only if
it is a regular file owned by this user (as root: by root), looked at without following
a symlink. /dev/shm is sticky, so once we have seen a file of ours under a name, no other
user can put something else under it before we unlink it.

Workers are forked after every array is allocated, so they inherit the
mappings; nothing is attached by name on the hot path. A process started afresh
(the plain-code host, a new interpreter so that its forks copy few page tables)
attaches a whole arena once from its ``layout``.

numpy is imported only when an array's ``np`` view is first asked for: a process
that only reads and writes words (the plain-code host and every process it forks)
stays without its ~9 MB, which each fork would copy the page tables of.
"""

from __future__ import annotations

import array
import contextlib
import errno
import functools
import mmap
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from shmstress.core.config import SHM_DIR_ENV
from shmstress.core.errors import ArenaFrozenError, SegmentError
from shmstress.core.plurals import sized
from shmstress.core.semaphores import (
    ForkSemaphores,
    NamedSemaphores,
    OpenedSemaphores,
    Semaphores,
)
from shmstress.core.signals import shielded
from shmstress.core.unguessable import create_unguessable, token

if TYPE_CHECKING:
    import numpy as np

SHM_DIR = Path(os.environ.get(SHM_DIR_ENV) or "/dev/shm")
"""Where segments live: /dev/shm, or a directory on a tmpfs named by ``$SHMSTRESS_SHM_DIR``
(read at import), which keeps a run out of sight of every other run's sweeper."""
SEGMENT_PREFIX = "shmstress-"
_SEGMENT_NAMES = (re.compile(r"^shmstress-(\d+)-(\d+)-[0-9a-f]{16}-(\d+)$"),  # pid, start, n
                  re.compile(r"^shmstress-(\d+)(?:-(\d+))?-(\d+)$"))  # earlier: pid, [start,] n
_Owner = tuple[int, int | None]  # a name's pid and start time (None: not in the name)
_ALIGN = 64
_DEFAULT_SEGMENT_BYTES = 1 << 20
_FILL_CHUNK = 1 << 20  # zeros written at a time where the file system cannot fallocate
_CLOSED_VIEW = memoryview(b"").cast("q")
_CLOSED_BYTES = memoryview(b"")


def start_time(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (field 22 of
    /proc/<pid>/stat): fixed for the life of a process and exact, unlike a wall-clock
    creation time, which moves with the boot time's rounding. None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        return int(stat[stat.rindex(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def segment_name(owner_pid: int, index: int, started: int | None = None,
                 random_part: str | None = None) -> str:
    """``shmstress-<pid>-<start>-<token>-<index>``; ``started`` defaults to the owner's start
    time (0 if the owner is gone), ``random_part`` to a fresh token."""
    if started is None:
        started = start_time(owner_pid)
    return (f"{SEGMENT_PREFIX}{owner_pid}-{started or 0}-"
            f"{random_part if random_part is not None else token()}-{index}")


def is_ours(st: os.stat_result) -> bool:
    """A regular file of this user (as root: of root), with no second name (a hard link
    another user made to a file of ours is not a file we made under that name)."""
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_nlink == 1


def open_ours(path: Path, flags: int) -> int:
    """A descriptor of ``path``, which must be ``is_ours``: opened without following a
    symlink or blocking on a FIFO, and checked once open (what is checked is what is
    open). Raises OSError, PermissionError for a file that is not ours."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        if not is_ours(os.fstat(fd)):
            raise PermissionError(errno.EPERM, f"not a regular file of uid {os.geteuid()}",
                                  str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def unlink_ours(path: Path) -> bool:
    """Unlink ``path`` if it is ``is_ours`` (looked at with lstat: a symlink is not
    followed, and is not ours); whether it was. In a sticky directory (/dev/shm) no other
    user can swap the name between the look and the unlink."""
    try:
        if not is_ours(os.lstat(path)):
            return False
        os.unlink(path)
    except OSError:
        return False
    return True


@dataclass
class Segment:
    """One mapped file in /dev/shm; unlinking removes the name, unmapping frees the memory."""

    name: str
    size: int
    mapping: mmap.mmap

    @classmethod
    def create(cls, name: str, size: int) -> Segment:
        """A new segment of ``size`` bytes, all of them reserved; FileExistsError if
        ``name`` is taken (by anything, a symlink too), SegmentError for anything else."""
        path = SHM_DIR / name
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600)
        except FileExistsError:
            raise
        except OSError as exc:
            raise SegmentError(f"cannot create shared memory segment {path}: {exc}") from exc
        try:
            _reserve(fd, size)
            mapping = mmap.mmap(fd, size)
        except BaseException as exc:  # a signal's exception too: reserving takes a while
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            if isinstance(exc, OSError):
                raise SegmentError(_no_room(path, size, exc)) from exc
            raise
        finally:
            os.close(fd)
        return cls(name=name, size=size, mapping=mapping)

    @classmethod
    def attach(cls, name: str, size: int) -> Segment:
        """Map an existing segment (another process of ours created it and still owns it)."""
        path = SHM_DIR / name
        try:
            fd = open_ours(path, os.O_RDWR)
        except OSError as exc:
            raise SegmentError(f"cannot open shared memory segment {path}: {exc}") from exc
        try:
            mapping = mmap.mmap(fd, size)
        except (OSError, ValueError) as exc:
            raise SegmentError(f"cannot map segment {path} ({size} bytes): {exc}") from exc
        finally:
            os.close(fd)
        return cls(name=name, size=size, mapping=mapping)

    def unlink(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(SHM_DIR / self.name)


def _reserve(fd: int, size: int) -> None:
    """Give the file ``size`` bytes the file system has set aside: a page of a sparse file
    is allocated at its first write, and one the file system cannot give kills the writer
    with SIGBUS. tmpfs supports fallocate; where a file system does not (and the C library
    does not emulate it), the zeros are written."""
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    os.ftruncate(fd, size)
    zeros = memoryview(bytes(min(size, _FILL_CHUNK)))
    offset = 0
    while offset < size:  # a write cut short by a full disk is followed by ENOSPC
        offset += os.pwrite(fd, zeros[: size - offset], offset)


def _no_room(path: Path, size: int, exc: OSError) -> str:
    """The line for a segment that could not be sized or mapped: for a full file system,
    how full, and what to do."""
    if exc.errno != errno.ENOSPC:
        return f"cannot size or map segment {path} ({size} bytes): {exc}"
    try:
        fs = os.statvfs(path.parent)
        room = (f" ({sized(fs.f_bavail * fs.f_frsize)} free of "
                f"{sized(fs.f_blocks * fs.f_frsize)})")
    except OSError:
        room = ""
    return (f"no room for a {sized(size)} shared memory segment in {path.parent}{room}: "
            f"{exc.strerror}; free some, or set ${SHM_DIR_ENV} to a larger tmpfs")


def _aligned(nbytes: int) -> int:
    return (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN


def _new_segment_size(last: int | None, offset: int, nbytes: int,
                      segment_bytes: int) -> int | None:
    """The size of the segment an array of ``nbytes`` needs, None if it fits in the last
    one (``last`` bytes, ``offset`` of them used): the rule ``Arena`` allocates by, and
    ``segment_bytes_for`` predicts with."""
    if last is not None and offset + nbytes <= last:
        return None
    return max(segment_bytes, _aligned(nbytes))


def segment_bytes_for(lengths: Iterable[int],
                      segment_bytes: int = _DEFAULT_SEGMENT_BYTES) -> int:
    """The bytes of the segments an arena creates for arrays of ``lengths`` int64 values,
    allocated in that order: what a run reserves in the segment directory for them."""
    sizes: list[int] = []
    offset = 0
    for length in lengths:
        size = _new_segment_size(sizes[-1] if sizes else None, offset, length * 8,
                                 segment_bytes)
        if size is not None:
            sizes.append(size)
            offset = 0
        offset += _aligned(length * 8)
    return sum(sizes)


class SharedArray:
    """An int64 array in shared memory, seen both as numpy (bulk checks) and memoryview (hot path).

    Single-element access through ``mv`` is about twice as fast as numpy
    indexing, which matters at every point; numpy serves whole-array checks.
    The numpy view is made on first use (then an attribute like any other), so a
    process that never asks for it never imports numpy.
    """

    def __init__(self, name: str, data: memoryview) -> None:
        self.name = name
        self._bytes = data  # numpy's array is made over these bytes, if ever asked for
        self.mv = data.cast("q")

    @functools.cached_property
    def np(self) -> np.ndarray:
        import numpy  # on first use only: see the class's docstring

        return numpy.frombuffer(self._bytes, dtype=numpy.int64)  # closed: empty, read-only

    def close(self) -> None:
        """Drop the views: ``mv`` and ``np`` are empty afterwards, not freed memory."""
        self.mv.release()
        self.mv = _CLOSED_VIEW
        self._bytes = _CLOSED_BYTES
        self.__dict__.pop("np", None)

    def __len__(self) -> int:
        return len(self.mv)

    def __repr__(self) -> str:
        return f"SharedArray({self.name!r}, {len(self.mv)} values)"


@dataclass(frozen=True)
class ArenaLayout:
    """Where an arena's arrays are: enough for another process to map the same ones by name."""

    owner_pid: int
    owner_started: int | None
    segments: tuple[tuple[str, int], ...]  # (name, size) of each segment, in order
    places: tuple[tuple[str, int, int, int], ...]  # (array, segment index, offset, bytes)
    semaphores: tuple[str, ...]  # names, in the order they were made


@dataclass(frozen=True)
class ArenaSnapshot:
    """The bytes of some of an arena's arrays, as (segment index, offset, bytes) ranges."""

    ranges: tuple[tuple[int, int, bytes], ...]


@dataclass
class Arena:
    """Allocates shared arrays from segments owned by this process, then frees them all at once."""

    owner_pid: int = field(default_factory=os.getpid)
    owner_started: int | None = None  # the owner's start time; read once, when first needed
    segment_bytes: int = _DEFAULT_SEGMENT_BYTES
    segments: list[Segment] = field(default_factory=list)
    arrays: dict[str, SharedArray] = field(default_factory=dict)
    _places: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    _offset: int = 0
    _frozen: bool = False
    _attached: bool = False  # mapped from another process's layout: not ours to unlink
    semaphores: Semaphores = field(default_factory=ForkSemaphores)
    """Where the semaphores of the arena's users come from (``named`` / ``attach``)."""

    @classmethod
    def named(cls) -> Arena:
        """An arena a fresh interpreter can attach (``layout``): its semaphores have names."""
        arena = cls()
        arena.owner_started = start_time(arena.owner_pid)
        arena.semaphores = NamedSemaphores(arena.owner_pid, arena.owner_started)
        return arena

    @classmethod
    def attach(cls, layout: ArenaLayout) -> Arena:
        """Another process's arena, its segments mapped here; ``array`` then hands out the
        arrays it allocated, by name and length, with their contents as they are, and
        ``semaphores`` its semaphores, asked for in the order they were made."""
        arena = cls(owner_pid=layout.owner_pid, owner_started=layout.owner_started,
                    _attached=True, semaphores=OpenedSemaphores(layout.semaphores))
        arena.segments = [Segment.attach(name, size) for name, size in layout.segments]
        arena._places = {name: (segment, start, nbytes)
                         for name, segment, start, nbytes in layout.places}
        return arena

    @property
    def attached(self) -> bool:
        """Mapped from another process's layout (its arrays' contents are that process's)."""
        return self._attached

    def layout(self) -> ArenaLayout:
        """What ``attach`` needs (an arena made by ``named``, once every user has built)."""
        semaphores = self.semaphores
        if not isinstance(semaphores, NamedSemaphores):
            raise SegmentError("only an arena made by Arena.named can be attached elsewhere")
        return ArenaLayout(
            self.owner_pid, self.owner_started,
            tuple((segment.name, segment.size) for segment in self.segments),
            tuple((name, *place) for name, place in self._places.items()),
            tuple(semaphores.names))

    def array(self, name: str, length: int, fill: int = 0) -> SharedArray:
        """Allocate ``length`` int64 values named ``name`` (names are unique per arena)."""
        if self._attached:
            return self._attached_array(name, length)
        if self._frozen:
            raise ArenaFrozenError(f"array {name!r} allocated after workers were started")
        if name in self.arrays:
            raise SegmentError(f"shared array {name!r} allocated twice")
        if length <= 0:
            raise SegmentError(f"shared array {name!r} needs a positive length, got {length}")
        nbytes = length * 8
        segment = self._segment_with_room(nbytes)
        start = self._offset
        self._offset = start + _aligned(nbytes)
        self._places[name] = (len(self.segments) - 1, start, nbytes)
        shared = SharedArray(name, memoryview(segment.mapping)[start : start + nbytes])
        if fill:  # new segments are zero-filled; skip touching every page
            shared.mv[:] = array.array("q", [fill]) * length
        self.arrays[name] = shared
        return shared

    def _attached_array(self, name: str, length: int) -> SharedArray:
        place = self._places.get(name)
        if place is None or place[2] != length * 8:
            raise SegmentError(f"shared array {name!r} of {length} values is not in the "
                               "arena attached")
        segment, start, nbytes = place
        mapping = self.segments[segment].mapping
        shared = SharedArray(name, memoryview(mapping)[start : start + nbytes])
        self.arrays[name] = shared
        return shared

    def _segment_with_room(self, nbytes: int) -> Segment:
        size = _new_segment_size(self.segments[-1].size if self.segments else None,
                                 self._offset, nbytes, self.segment_bytes)
        if size is None:
            return self.segments[-1]
        if self.owner_started is None:
            self.owner_started = start_time(self.owner_pid)
        pid, started, index = self.owner_pid, self.owner_started, len(self.segments)
        with shielded():  # made and listed, or neither: a signal waits for the listing
            segment = create_unguessable(
                lambda name: Segment.create(name, size),
                lambda random_part: segment_name(pid, index, started, random_part),
                f"a shared memory segment in {SHM_DIR}")
            self.segments.append(segment)
        self._offset = 0
        return segment

    def snapshot(self, keep: Callable[[str], bool]) -> ArenaSnapshot:
        """Copy the arrays whose names ``keep`` accepts; adjacent ones become one range.

        Controlled mode restores a tracker's state in place between executions
        instead of forking fresh workers, which is what makes hundreds of
        executions per second possible.
        """
        ranges: list[tuple[int, int, int]] = []
        for name, (segment, start, nbytes) in sorted(self._places.items(), key=lambda p: p[1]):
            if not keep(name):
                continue
            if ranges and ranges[-1][0] == segment and ranges[-1][2] == start:
                ranges[-1] = (segment, ranges[-1][1], start + nbytes)
            else:
                ranges.append((segment, start, start + nbytes))
            ranges[-1] = (segment, ranges[-1][1], (ranges[-1][2] + _ALIGN - 1) // _ALIGN * _ALIGN)
        return ArenaSnapshot(tuple(
            (segment, start, bytes(self.segments[segment].mapping[start:end]))
            for segment, start, end in ranges
        ))

    def restore(self, snapshot: ArenaSnapshot) -> None:
        """Write a snapshot's bytes back in place (no process may be touching them)."""
        for segment, start, data in snapshot.ranges:
            self.segments[segment].mapping[start : start + len(data)] = data

    def freeze(self) -> None:
        """Forbid further allocation: workers forked from here on would not see it."""
        self._frozen = True

    def close(self) -> int:
        """Unlink every segment, drop the arena's views and unmap; returns the segments
        still mapped because code outside the arena holds a view (they go with GC).

        Each ``SharedArray`` is left pointing at an empty array, so a tracker that
        touches shared state after the run gets an IndexError, not freed memory.
        """
        if not self._attached:
            for segment in self.segments:
                segment.unlink()
            self.semaphores.unlink()
        for shared in self.arrays.values():
            shared.close()
        self.arrays.clear()
        still_mapped = 0
        for segment in self.segments:
            try:
                segment.mapping.close()
            except BufferError:
                still_mapped += 1
        self.segments.clear()
        return still_mapped

    def __enter__(self) -> Arena:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def live_segments() -> list[str]:
    """Names of every shmstress segment currently in the segment directory."""
    return [path.name for path in _named(SHM_DIR, _SEGMENT_NAMES)]


def segment_owner(name: str) -> int:
    """The pid of the coordinator that created segment ``name``."""
    return _segment_owner(name)[0]


def segment_owner_started(name: str) -> int | None:
    """The start time of segment ``name``'s owner, as its name keeps it (None: an old name
    without it, or 0, a start time that could not be read)."""
    return _segment_owner(name)[1]


def _segment_owner(name: str) -> _Owner:
    owner = _owner(name, _SEGMENT_NAMES)
    if owner is None:
        raise ValueError(f"{name!r} is not a shmstress segment name")
    return owner


def is_stale(name: str) -> bool:
    """Whether segment ``name``'s owner is gone: no process has its pid, or the process that
    has it now started at another time (the pid was reused by an unrelated process)."""
    return _owner_gone(*_segment_owner(name))


def _owner_gone(pid: int, started: int | None) -> bool:
    import psutil  # the sweeper's alone: a fresh host need not load it

    if not psutil.pid_exists(pid):
        return True
    if started is None:  # an old name: the pid is all it says
        return False
    return start_time(pid) != started  # None: it exited meanwhile


POSIX_SHM_DIR = Path("/dev/shm")
"""Where ``shm_open`` names live on Linux (the code under test's segments, not ours)."""
_LIST_NAMES = (re.compile(r"^shmstress-(\d+)-(\d+)(?:-[0-9a-f]{16})?-created$"),)  # pid, start
_SEMAPHORE_NAMES = (re.compile(r"^sem\.shmstress-(\d+)-(\d+)-sem-"),)  # core.semaphores'


@dataclass(frozen=True)
class CreatedSegments:
    """The named segments the code under test created during a run, in a file beside ours.

    Code under test may ``shm_open`` segments under names of its own (``SharedMemory``, a
    library's blocks). The run unlinks those it left when it ends; a coordinator killed
    with SIGKILL cannot, so each creation and unlink is also appended here (one ``write``
    of ``+name`` or ``-name``, atomic under ``O_APPEND``, from any process of the run) and
    ``sweep_stale_segments`` unlinks what the file says is still there once its owner is
    gone: by this list, never by guessing from names. A name it lists was created by that
    run, under our uid; it is unlinked only if it is still a file of ours (``is_ours``).

    The list is made by ``of`` (``O_EXCL``, under an unguessable name) and only ever
    opened as ``is_ours`` afterwards: one another user planted, or a symlink, is neither
    written to nor read.
    """

    path: Path

    @classmethod
    def of(cls, owner_pid: int, owner_started: int | None) -> CreatedSegments:
        """A new, empty list for the run of ``owner_pid``."""
        def create(name: str) -> CreatedSegments:
            path = SHM_DIR / name
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                raise
            except OSError as exc:
                raise SegmentError(f"cannot create the run's list of segments {path}: "
                                   f"{exc}") from exc
            os.close(fd)
            return cls(path)

        prefix = f"{SEGMENT_PREFIX}{owner_pid}-{owner_started or 0}-"
        return create_unguessable(create, lambda random_part: f"{prefix}{random_part}-created",
                                  f"the run's list of segments in {SHM_DIR}")

    def created(self, name: str) -> None:
        self._append(f"+{name}\n")

    def unlinked(self, name: str) -> None:
        self._append(f"-{name}\n")

    def _append(self, line: str) -> None:
        with contextlib.suppress(OSError):  # bookkeeping for a crash must not cause one
            fd = open_ours(self.path, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, line.encode("utf-8", "surrogateescape"))
            finally:
                os.close(fd)

    def left(self) -> list[str]:
        """The names created and not unlinked since, in the order they were created (none
        from a file that is not ours)."""
        alive: dict[str, None] = {}
        for line in self._read().splitlines():
            name = line[1:].lstrip("/")  # shm_open's names may start with a slash
            if line.startswith("+") and "/" not in name and name not in ("", ".", ".."):
                alive[name] = None
            elif line.startswith("-"):
                alive.pop(name, None)
        return list(alive)

    def _read(self) -> str:
        try:
            fd = open_ours(self.path, os.O_RDONLY)
        except OSError:
            return ""
        with open(fd, "rb") as file:
            return file.read().decode("utf-8", "surrogateescape")

    def unlink_left(self) -> list[str]:
        """Unlink every segment still listed that is still ours (one may be gone already),
        then the list; nothing at all if the list is not ours."""
        removed = [name for name in self.left() if unlink_ours(POSIX_SHM_DIR / name)]
        unlink_ours(self.path)
        return removed


def sweep_stale_segments() -> list[str]:
    """Unlink segments whose owner process is gone (a coordinator killed with SIGKILL), or
    whose pid now belongs to another process; and the segments its code under test created
    and left, as its ``CreatedSegments`` list says. Only files of ours (``is_ours``)."""
    return _sweep(None)


def sweep_segments_of(pids: Iterable[int]) -> list[str]:
    """``sweep_stale_segments`` for the given processes only, once they are gone: what a
    parent that reaped them (killed mid-run, their own teardown cut short) must not leave."""
    return _sweep(set(pids))


def _sweep(owners: set[int] | None) -> list[str]:
    """The stale segments of ``owners`` (None: of anyone) unlinked, and their names."""

    def stale(owner: _Owner) -> bool:
        return (owners is None or owner[0] in owners) and _owner_gone(*owner)

    removed = [path.name for path in _named(SHM_DIR, _SEGMENT_NAMES, stale)
               if unlink_ours(path)]
    for path in _named(SHM_DIR, _LIST_NAMES, stale):
        removed += CreatedSegments(path).unlink_left()
    # named for a fresh host, left by a killed coordinator
    removed += [path.name for path in _named(POSIX_SHM_DIR, _SEMAPHORE_NAMES, stale)
                if unlink_ours(path)]
    return removed


def _owner(name: str, patterns: Iterable[re.Pattern[str]]) -> _Owner | None:
    """The owner a name says, as the first of ``patterns`` it matches has it in its groups
    1 (pid) and 2 (start time; absent or 0: None); None for a name none matches."""
    for pattern in patterns:
        match = pattern.match(name)
        if match is not None:
            return int(match.group(1)), int(match.group(2) or 0) or None
    return None


def _named(directory: Path, patterns: Iterable[re.Pattern[str]],
           keep: Callable[[_Owner], bool] = lambda _: True) -> list[Path]:
    """The entries of ``directory`` whose name says an owner (``_owner``) that ``keep``
    accepts, sorted by name; none if there is no such directory."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        owner = _owner(name, patterns)
        if owner is not None and keep(owner):
            found.append(directory / name)
    return found
