"""Where a manager's objects live under control: pickled, in a segment of the manager's own.

The real server keeps each object (a ``dict``, a ``Namespace``, a registered class's
instance) in its own memory and runs one method call per request. Here the call runs in
the process that makes it (``plain.sync.manager``), so the object has to be where every
process of the execution can load it: one named segment per manager, mapped by whoever
holds one of its proxies (inherited over a fork, or attached by name by a proxy that
arrived pickled), holding each object's pickle.

Layout, in 8-byte words and then bytes: a header (shut down, heap top), a table with
one entry per row of the board's object table (an object's row is its id here too:
offset, length and capacity of its pickle in the heap, and a version that every write
bumps), then the heap. A pickle that outgrows its place moves to the top of the heap
(with room to double); a full heap is compacted once before the store gives up.

The segment's name is the session's and the manager's row (no random part): a bundle
that names it replays in another session, and a session of many executions interns one
name per manager row, not one per execution. It is in the board's segment table like
every segment the scenario creates, so an execution that ends before ``shutdown``
leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import secrets
from multiprocessing import shared_memory

from shmstress.core.errors import PlainLimitError
from shmstress.plain.board import O_NAME, O_STRIDE, Kind
from shmstress.plain.runtime import PlainRuntime

PLUMBING = True

STORE_BYTES = 1 << 20
"""A manager's segment: its table and the pickles of its objects (tmpfs: only the pages
written take memory)."""

# The real class, bound now: ``patch.install`` puts the instrumented one in its place
# later, and the store is the harness's own segment, not a scenario object to name.
_Segment = shared_memory.SharedMemory

_H_SHUT = 0
_H_TOP = 1  # bytes of the heap in use
_HEADER = 4
_E_OFFSET = 0
_E_LENGTH = 1
_E_CAPACITY = 2
_E_VERSION = 3
_E_STRIDE = 4
_MIN_CAPACITY = 64


def gone(what: str) -> ConnectionRefusedError:
    """What a proxy raises after its manager shut down: the real one's server is gone."""
    return ConnectionRefusedError(f"{what}: its manager has shut down")


class Store:
    """One manager's segment, mapped in this process."""

    def __init__(self, runtime: PlainRuntime, segment: shared_memory.SharedMemory) -> None:
        self.runtime = runtime
        self.name: str = getattr(segment, "_name")  # noqa: B009 - as the segment table has it
        self._segment = segment
        mapped = segment.buf
        assert mapped is not None  # open: it was just made or attached
        self._bytes = mapped
        self._words = mapped.cast("q")
        rows = runtime.board.max_objects
        self._heap = (_HEADER + rows * _E_STRIDE) * 8
        self._room = len(self._bytes) - self._heap

    # -- the objects ----------------------------------------------------------------------
    def pickled(self, row: int) -> memoryview:
        """The pickle of the object in ``row`` (a view into the segment)."""
        entry = _HEADER + row * _E_STRIDE
        start = self._heap + int(self._words[entry + _E_OFFSET])
        return self._bytes[start: start + int(self._words[entry + _E_LENGTH])]

    def version(self, row: int) -> int:
        return int(self._words[_HEADER + row * _E_STRIDE + _E_VERSION])

    def keep(self, row: int, data: bytes, what: str) -> None:
        """Store ``data`` as the pickle of the object in ``row`` (``what`` names it in the
        error that says it no longer fits)."""
        words = self._words
        entry = _HEADER + row * _E_STRIDE
        if len(data) > words[entry + _E_CAPACITY]:
            self._place(entry, len(data), what)
        start = self._heap + int(words[entry + _E_OFFSET])
        self._bytes[start: start + len(data)] = data
        words[entry + _E_LENGTH] = len(data)
        words[entry + _E_VERSION] += 1

    def _place(self, entry: int, size: int, what: str) -> None:
        capacity = max(_MIN_CAPACITY, 1 << (size - 1).bit_length())
        words = self._words
        if words[_H_TOP] + capacity > self._room:
            words[entry + _E_LENGTH] = 0  # its old pickle is about to be replaced: drop it
            words[entry + _E_CAPACITY] = 0
            self._compact()
            if words[_H_TOP] + size > self._room:
                raise PlainLimitError(
                    f"{what} does not fit in its manager's store under shmstress "
                    f"({STORE_BYTES >> 20} MiB of pickled objects per manager)")
            capacity = min(capacity, self._room - int(words[_H_TOP]))
        words[entry + _E_OFFSET] = words[_H_TOP]
        words[entry + _E_CAPACITY] = capacity
        words[_H_TOP] += capacity

    def _compact(self) -> None:
        """Move every pickle down to the start of the heap, each with no room to spare."""
        words = self._words
        live = []
        for entry in range(_HEADER, self._heap // 8, _E_STRIDE):
            if words[entry + _E_CAPACITY]:
                start = self._heap + int(words[entry + _E_OFFSET])
                live.append((entry, bytes(self._bytes[start: start + words[entry + _E_LENGTH]])))
        top = 0
        for entry, data in live:
            self._bytes[self._heap + top: self._heap + top + len(data)] = data
            words[entry + _E_OFFSET] = top
            words[entry + _E_CAPACITY] = max(len(data), 8)
            top += max(len(data), 8)
        words[_H_TOP] = top

    def new_row(self, word: str) -> tuple[int, str]:
        """A row of the object table for a manager's object, named after the variable its
        creation line assigns (``d = manager.dict()`` is "d"); returns (row, name)."""
        return self.runtime.new_object(Kind.MANAGED, word)

    def object_name(self, row: int) -> str:
        board = self.runtime.board
        return self.runtime.name_of(int(board.objects.mv[row * O_STRIDE + O_NAME]))

    # -- the manager's life ---------------------------------------------------------------
    @property
    def shut_down(self) -> bool:
        return bool(self._words[_H_SHUT])

    def shut(self) -> None:
        """The manager shut down: its proxies fail from now on, in every process."""
        self._words[_H_SHUT] = 1
        with contextlib.suppress(FileNotFoundError):
            _Segment.unlink(self._segment)
        self.runtime.unlinked_segment(self.name)


class Stores:
    """The stores mapped in this process, by name (a proxy that arrives pickled finds its
    manager's store here, or attaches it once)."""

    def __init__(self, runtime: PlainRuntime) -> None:
        self.runtime = runtime
        self._mapped: dict[str, Store] = {}

    def create(self, manager_row: int) -> Store:
        runtime = self.runtime
        name = _store_name(runtime, manager_row)
        try:
            segment = _Segment(name, create=True, size=STORE_BYTES)
        except FileExistsError:  # ours, left by an execution that was cut short
            with contextlib.suppress(FileNotFoundError):
                _Segment(name).unlink()
            segment = _Segment(name, create=True, size=STORE_BYTES)
        try:
            runtime.created_segment(getattr(segment, "_name"))  # noqa: B009 - private
        except PlainLimitError:
            segment.unlink()
            raise
        if not runtime.scheduled:  # made at import: restored before every execution
            mapping = getattr(segment, "_mmap")  # noqa: B009 - private in the stubs
            runtime.register_buffer(ctypes.addressof(ctypes.c_char.from_buffer(mapping)),
                                    STORE_BYTES)
        store = Store(runtime, segment)
        self._mapped[store_key(store.name)] = store
        return store

    def attach(self, name: str) -> Store:
        key = store_key(name)
        found = self._mapped.get(key)
        if found is None:
            try:
                segment = _Segment(key)
            except FileNotFoundError:
                raise gone(name) from None
            found = self._mapped[key] = Store(self.runtime, segment)
        return found


def store_key(name: str) -> str:
    """A store's name as ``SharedMemory`` takes it (the segment table keeps the slash)."""
    return name.lstrip("/")


def _store_name(runtime: PlainRuntime, row: int) -> str:
    created = runtime.created
    if created is None:  # a runtime without a run's segment list: any free name
        return f"shmstress-manager-{secrets.token_hex(8)}"
    return f"{created.path.name.removesuffix('created')}manager{row}"
