"""Recording every point into shared memory, with no text and no I/O on the hot path.

Three pieces, all in shared memory so the coordinator can read them after the
workers are gone, whatever way they ended:

- a **string table**: labels with their call sites, field names and string
  values, each interned once per process (a dict hit afterwards) into a table
  every process shares, so a record holds small ids. Texts live whole in a
  byte heap: nothing is cut, and a full table is an error, never a silent loss;
- one **ring per worker** of fixed-size records (sequence number, monotonic
  time, worker, label id, up to ``MAX_FIELDS`` typed fields); when a ring
  wraps, the loss is counted and reported, never silent;
- the **schedule tape**: for every sequence number, which worker took it at
  which label. It is what a replay follows, so it is indexed by sequence
  number and never wraps; points past its end are counted as not replayable.

**Call sites.** A record's label id names its text *and* its call site: the
first frame outside the harness's point plumbing, the modules that declare
``PLUMBING = True`` at module level (the recorder, the runtime, the locks, the
controlled gate, and whatever instrumented primitive comes next). The site is
identified per event by the calling frame's code object and instruction
offset, a few attribute reads and one dict hit; the file name and line are
resolved, and the entry interned, only the first time a site is seen. So one
label used at two places shows both places, and a label first seen as a field
value still gets its call site when it is first used as a label.

**Fields** keep their type: int (and int-likes such as IntEnum or numpy
integers), bool, float, str, None, and sequences of ints (tuple, list or an
integer numpy array, e.g. a set of device ids), decoded as a tuple. A
sequence's items go into continuation slots right after the record in the
same ring, so a record is kept or lost whole. Anything else, a fifth field,
an int outside int64, or a sequence too long for the ring is refused with a
``RecordFieldError`` naming the call site the first time a site does it: no
per-event validation beyond the type dispatch packing needs anyway.

**Crash safety.** Each slot starts with a tag holding its ring index, written
first; the ring's counter is bumped only after the whole record is written.
A worker killed mid-record leaves either a slot past the counter (never read)
or a slot whose tag does not match the index the counter implies (dropped and
counted as lost), never a stale slot decoded as a record.

A tracker's log call that is not a point (``Runtime.log``) is a ring record
too, stamped with the sequence number of the worker's last point and a
sub-index (1, 2, ...), so merging by (seq, sub) puts it right after the point
it follows; it takes no sequence number and is not a step of the schedule.
"""

from __future__ import annotations

import enum
import operator
import os
import struct
import sys
import time
from collections.abc import Mapping, Sequence
from multiprocessing.synchronize import Lock as MpLock
from types import FrameType
from typing import Any

from shmstress.core.errors import RecordFieldError
from shmstress.core.shm import Arena, SharedArray
from shmstress.core.trace import Label, Record, Recording, Step

MAX_FIELDS = 4
SLOT_WORDS = 16  # one record: tag, seq, time, worker, label, count, 4 x (key, value), sub, level
_SLOT = struct.Struct(f"{SLOT_WORDS}q")
_SLOT_BYTES = SLOT_WORDS * 8
_ITEMS_PER_SLOT = SLOT_WORDS - 1  # a continuation slot: its tag, then items of sequence fields
_EXTRA_BITS = 8  # a header's tag: (ring index + 1) << 8 | continuation slots that follow it
_MAX_EXTRA = (1 << _EXTRA_BITS) - 1
MAX_SEQUENCE_ITEMS = _MAX_EXTRA * _ITEMS_PER_SLOT
"""The most sequence items one record holds (fewer in a ring of under 256 records): a point
whose set may grow past it records the set's size instead."""
_COUNTER_STRIDE = 16  # words between two workers' ring counters
_NO_FIELDS = (0,) * (1 + 2 * MAX_FIELDS)  # count and fields of a bare point
_TYPE_SHIFT = 40  # a field's key word: key id | FieldType << 40
_KEY_MASK = (1 << _TYPE_SHIFT) - 1
_SPAN_SHIFT = 32  # a sequence field's value word: offset into the payload << 32 | length
_DOUBLE = struct.Struct("<d")
_INT64 = struct.Struct("<q")
_monotonic_ns = time.monotonic_ns
_getframe = sys._getframe
MAX_STRINGS = 4096
"""Interned strings a recording holds (field names and values, labels, sites)."""
_ENTRY_WORDS = 5  # per string: text offset, text length, file offset, file length, line
_PLAIN = -1  # the line of a string that is not a label (a field name or value)
_TAPE_WORKER_SHIFT = 32
PLUMBING = True
"""This module is point plumbing: a call site is never one of its lines (see ``is_plumbing``)."""
_POINT_SINK_DEPTH = 3
_LOG_SINK_DEPTH = 2
"""Frames between a sink and the nearest possible call site, skipped before the walk out of
the plumbing begins: the sink itself and the runtime's calls into it (a point sink is
called by ``commit_point``, which an entry point calls; a log sink by the entry point). The
walk, not these numbers, finds the site: a deeper stack of plumbing is walked through. Each
frame walked is a frame object built, so the skip keeps a recorded point as cheap as it
was before the walk existed."""


class FieldType(enum.IntEnum):
    """How a field's value word is to be read back."""

    INT = 0
    BOOL = 1
    STR = 2  # a string id
    FLOAT = 3  # the IEEE 754 bits
    NONE = 4
    INTS = 5  # a span of the record's continuation slots


_STR_KEY = FieldType.STR << _TYPE_SHIFT  # plain ints: the hot path skips the enum lookups
_BOOL_KEY = FieldType.BOOL << _TYPE_SHIFT


def recording_arrays(workers: int, ring_size: int, tape_size: int,
                     max_strings: int = MAX_STRINGS) -> dict[str, int]:
    """The shared arrays of a recording and their lengths in int64 values, in the order
    a ``Recorder`` allocates them (the up-front check counts the segments they take)."""
    return {
        "recording.strings": max_strings * _ENTRY_WORDS,
        "recording.heap": max_strings * 8,  # 64 bytes each
        "recording.string_count": 2,  # n, heap used
        "recording.rings": max(1, workers) * ring_size * SLOT_WORDS,
        # one counter per 128 bytes: workers bump theirs at every point, and counters
        # sharing a cache line would bounce it between the CPUs
        "recording.ring_written": max(1, workers) * _COUNTER_STRIDE,
        # entry + 1 per sequence number, so that 0 (a fresh page) means "not written"
        "recording.tape": tape_size,
        "recording.clock": 2,
    }


class Recorder:
    """Shared recording state; built before the fork, then used inside each worker."""

    def __init__(
        self, arena: Arena, workers: int, ring_size: int, tape_size: int,
        max_strings: int = MAX_STRINGS,
    ) -> None:
        self.workers = workers
        self.ring_size = ring_size
        self.tape_size = tape_size
        self.max_strings = max_strings
        arrays = {name: arena.array(name, length) for name, length
                  in recording_arrays(workers, ring_size, tape_size, max_strings).items()}
        self.strings: SharedArray = arrays["recording.strings"]
        self.heap: SharedArray = arrays["recording.heap"]
        self.string_count: SharedArray = arrays["recording.string_count"]
        self.rings: SharedArray = arrays["recording.rings"]
        self.ring_written: SharedArray = arrays["recording.ring_written"]
        self.tape: SharedArray = arrays["recording.tape"]
        self.clock: SharedArray = arrays["recording.clock"]
        if not arena.attached:  # the maker's clock, not reset by a process that attaches
            self.clock.mv[0] = time.monotonic_ns()
            self.clock.mv[1] = time.time_ns()
        self._lock: MpLock = arena.semaphores.lock()
        self._table: dict[tuple[str, str, int], int] = {}  # this process's copy of the table
        self._synced = 0  # entries of the shared table copied into ``_table``
        self._strings: dict[str, int] = {}  # field names and values
        self._sites: dict[tuple[int, int, str], int] = {}  # (code id, offset, label) -> id
        self._labels_read: list[Label] = []  # ``records_from``'s decoded strings
        self._last_log = (-1, -1, 0)  # (worker, seq, sub) of this process's latest log call
        self._ring_bytes = self.rings.mv.cast("B")
        self._heap_bytes = self.heap.mv.cast("B")
        self._tape_mv = self.tape.mv
        self._written_mv = self.ring_written.mv

    # -- interning ------------------------------------------------------------------------
    def intern(self, text: str, call_site: bool = False) -> int:
        """The shared id of ``text``; with ``call_site``, of it as a label at the caller's site."""
        if not call_site:
            found = self._strings.get(text)
            if found is None:
                found = self._strings[text] = self._entry(text, "", _PLAIN)
            return found
        frame = _caller(_getframe())
        return self._entry(text, os.path.basename(frame.f_code.co_filename), frame.f_lineno)

    def intern_at(self, text: str, file: str, line: int) -> int:
        """The shared id of ``text`` as a label at ``file``:``line`` (a site found elsewhere)."""
        return self._entry(text, file, line)

    def _label_id(self, frame: FrameType, label: str) -> int:
        """The id of ``label`` at its call site, the first frame from ``frame`` out of the
        plumbing: identified by code object and instruction offset, resolved on first sight."""
        while frame.f_globals.get("PLUMBING") is True:
            frame = frame.f_back  # type: ignore[assignment]  # a tracker frame is always above
        code = frame.f_code
        key = (id(code), frame.f_lasti, label)
        found = self._sites.get(key)
        if found is None:
            found = self._sites[key] = self._entry(
                label, os.path.basename(code.co_filename), frame.f_lineno
            )
        return found

    def _entry(self, text: str, file: str, line: int) -> int:
        key = (text, file, line)
        found = self._table.get(key)
        if found is not None:
            return found
        with self._lock:
            self._sync()
            found = self._table.get(key)
            if found is None:
                found = self._table[key] = self._append(text, file, line)
                self._synced += 1
        return found

    def _sync(self) -> None:
        """Copy the entries other processes appended into this process's table."""
        for ident in range(self._synced, self.string_count.mv[0]):
            label = self._decode_string(ident)
            self._table.setdefault((label.text, label.file, label.line), ident)
        self._synced = self.string_count.mv[0]

    def _append(self, text: str, file: str, line: int) -> int:
        counts = self.string_count.mv
        ident = counts[0]
        raw_text, raw_file = text.encode(errors="surrogatepass"), file.encode()
        used = counts[1]
        end = used + len(raw_text) + len(raw_file)
        if ident >= self.max_strings or end > len(self._heap_bytes):
            raise RecordFieldError(
                f"the recording's string table is full ({self.max_strings} labels, field "
                f"names and string values) at {text[:60]!r}: string fields are for names, "
                "not for data; record ids as ints"
            )
        self._heap_bytes[used : used + len(raw_text)] = raw_text
        self._heap_bytes[used + len(raw_text) : end] = raw_file
        entry = (used, len(raw_text), used + len(raw_text), len(raw_file), line)
        for offset, word in enumerate(entry, ident * _ENTRY_WORDS):
            self.strings.mv[offset] = word
        counts[1] = end
        counts[0] = ident + 1  # last: another process syncs only complete entries
        return ident

    def labels_seen(self) -> frozenset[str]:
        """Every point and log label recorded at a call site so far (not field values)."""
        return frozenset(label.text for ident in range(self.string_count.mv[0])
                         if (label := self._decode_string(ident)).line >= 0)

    def label(self, ident: int) -> Label:
        """The interned string ``ident`` (the controlled-mode coordinator reads parked labels)."""
        return self._decode_string(ident)

    def _decode_string(self, ident: int) -> Label:
        base = ident * _ENTRY_WORDS
        text_at, text_len, file_at, file_len, line = self.strings.mv[base : base + _ENTRY_WORDS]
        heap = self._heap_bytes
        return Label(
            bytes(heap[text_at : text_at + text_len]).decode(errors="surrogatepass"),
            bytes(heap[file_at : file_at + file_len]).decode(errors="replace"),
            line,
        )

    # -- hot path -------------------------------------------------------------------------
    def record(self, seq: int, worker: int, label: str, fields: dict[str, object]) -> None:
        """The runtime's point sink: one ring record and one tape entry, no formatting."""
        label_id = self._label_id(_getframe(_POINT_SINK_DEPTH), label)
        if seq < self.tape_size:
            self._tape_mv[seq] = ((worker << _TAPE_WORKER_SHIFT) | label_id) + 1
        self._write(seq, worker, label_id, fields, 0, 0)

    def log(
        self, seq: int, worker: int, message: str, level: int, fields: Mapping[str, object]
    ) -> None:
        """The runtime's log sink: a ring record after point ``seq``; no tape entry."""
        if worker < 0:
            return
        last_worker, last_seq, last_sub = self._last_log
        sub = last_sub + 1 if (last_worker, last_seq) == (worker, seq) else 1
        self._last_log = (worker, seq, sub)
        label_id = self._label_id(_getframe(_LOG_SINK_DEPTH), message)
        self._write(seq, worker, label_id, fields, sub, level)

    def _write(
        self, seq: int, worker: int, label_id: int, fields: Mapping[str, Any], sub: int,
        level: int,
    ) -> None:
        """Pack the record: its continuation slots and its own slot first, the counter last."""
        counter = worker * _COUNTER_STRIDE
        written_mv = self._written_mv
        index = written_mv[counter]
        offset = (worker * self.ring_size + index % self.ring_size) * _SLOT_BYTES
        if not fields:
            _SLOT.pack_into(self._ring_bytes, offset, (index + 1) << _EXTRA_BITS, seq,
                            _monotonic_ns(), worker, label_id, *_NO_FIELDS, sub, level)
            written_mv[counter] = index + 1
            return
        if len(fields) > MAX_FIELDS:
            raise self._refuse(label_id, f"has more than {MAX_FIELDS} fields")
        # tag, seq, time, worker, label, count, (key id | type, value word) x 4, sub, level
        words = [(index + 1) << _EXTRA_BITS, seq, 0, worker, label_id, len(fields),
                 0, 0, 0, 0, 0, 0, 0, 0, sub, level]
        strings = self._strings
        items: list[int] | None = None  # the items of sequence fields, in field order
        at = 6
        for key, raw in fields.items():
            key_id = strings.get(key)
            if key_id is None:
                key_id = self.intern(key)
            kind = type(raw)
            if kind is int:  # the common case first
                value = raw
            elif kind is str:
                value = strings.get(raw)
                if value is None:
                    value = self.intern(raw)
                key_id |= _STR_KEY
            elif kind is bool:
                value = int(raw)
                key_id |= _BOOL_KEY
            else:
                if items is None:
                    items = []
                field_type, value = self._pack_other(label_id, key, raw, items)
                key_id |= field_type << _TYPE_SHIFT
            words[at] = key_id
            words[at + 1] = value
            at += 2
        extra = 0
        if items:
            extra = self._write_items(label_id, worker, index, items)
            words[0] |= extra
        words[2] = _monotonic_ns()
        try:
            _SLOT.pack_into(self._ring_bytes, offset, *words)
        except struct.error:
            raise self._refuse(label_id, "has an int field outside int64") from None
        written_mv[counter] = index + 1 + extra

    def _pack_other(
        self, label_id: int, key: str, raw: object, items: list[int]
    ) -> tuple[FieldType, int]:
        """The value types off the fast path; anything unsupported is refused, never coerced."""
        if raw is None:
            return FieldType.NONE, 0
        import numpy as np  # here, off the hot path: a process that records nothing skips it

        if isinstance(raw, (tuple, list, np.ndarray)):
            array = np.asarray(raw)
            kind = array.dtype.kind
            if array.ndim == 1 and (
                kind == "i" or (kind == "u" and array.dtype.itemsize < 8) or not array.size
            ):
                start = len(items)
                items.extend(array.tolist())
                return FieldType.INTS, start << _SPAN_SHIFT | len(array)
        elif isinstance(raw, (bool, np.bool_)):
            return FieldType.BOOL, int(raw)
        elif isinstance(raw, (float, np.floating)):
            return FieldType.FLOAT, _INT64.unpack(_DOUBLE.pack(float(raw)))[0]
        elif isinstance(raw, str):
            return FieldType.STR, self.intern(str.__str__(raw))
        else:
            try:
                return FieldType.INT, operator.index(raw)  # type: ignore[arg-type]
            except TypeError:
                pass
        raise self._refuse(
            label_id,
            f"has field {key}={raw!r:.60} of type {type(raw).__name__}; a field is an int, "
            "bool, float, str, None or a flat sequence of ints",
        )

    def _write_items(self, label_id: int, worker: int, index: int, items: list[int]) -> int:
        """Sequence items into the slots after the record's; how many slots they took."""
        extra = -(-len(items) // _ITEMS_PER_SLOT)
        if extra > _MAX_EXTRA or extra >= self.ring_size:
            raise self._refuse(
                label_id,
                f"has {len(items)} sequence items, more than a record holds "
                f"({min(_MAX_EXTRA, self.ring_size - 1) * _ITEMS_PER_SLOT} with this ring size)",
            )
        items += [0] * (extra * _ITEMS_PER_SLOT - len(items))
        ring_base = worker * self.ring_size
        for k in range(1, extra + 1):
            _SLOT.pack_into(
                self._ring_bytes, (ring_base + (index + k) % self.ring_size) * _SLOT_BYTES,
                -(index + k + 1),  # the tag first, as in every slot
                *items[(k - 1) * _ITEMS_PER_SLOT : k * _ITEMS_PER_SLOT],
            )
        return extra

    def _refuse(self, label_id: int, problem: str) -> RecordFieldError:
        label = self.label(label_id)
        return RecordFieldError(
            f"{label.file}:{label.line}: the point or log call {label.text!r} {problem}"
        )

    # -- after the run --------------------------------------------------------------------
    def collect(self, points: int) -> Recording:
        """Decode everything; ``points`` is how many sequence numbers the run handed out."""
        labels = tuple(self._decode_string(i) for i in range(self.string_count.mv[0]))
        records: list[Record] = []
        logs: list[Record] = []
        lost: dict[int, int] = {}
        for worker in range(self.workers):
            decoded, missing = self._decode_ring(worker, labels)
            for record in decoded:
                (logs if record.sub else records).append(record)
            if missing:
                lost[worker] = missing
        records.sort(key=lambda r: r.seq)
        logs.sort(key=lambda r: (r.seq, r.sub))
        import numpy as np  # the coordinator's, after the run

        tape = self.tape.np
        end = int(np.argmax(tape == 0)) if bool((tape == 0).any()) else len(tape)
        steps = tuple(
            Step((int(entry) - 1) >> _TAPE_WORKER_SHIFT,
                 labels[(int(entry) - 1) & 0xFFFFFFFF].text)
            for entry in tape[:end]
        )
        return Recording(
            labels=labels,
            records=tuple(records),
            ring_lost=lost,
            steps=steps,
            tape_lost=max(0, points - self.tape_size),
            mono0_ns=int(self.clock.mv[0]),
            wall0_ns=int(self.clock.mv[1]),
            logs=tuple(logs),
        )

    def records_from(self, worker: int, start: int) -> tuple[list[Record], int]:
        """The worker's records from ring index ``start`` on, and the index after them: read
        while an execution runs (``import-log`` matches each step's records as it is taken,
        so the strings are decoded once and kept)."""
        count = self.string_count.mv[0]
        known = self._labels_read
        if len(known) > count:  # a table that was reset: read it again
            known.clear()
        known.extend(self._decode_string(i) for i in range(len(known), count))
        records, _ = self._decode_ring(worker, known, start)
        return records, int(self.ring_written.mv[worker * _COUNTER_STRIDE])

    def _decode_ring(self, worker: int, labels: Sequence[Label],
                     start: int = 0) -> tuple[list[Record], int]:
        """The worker's records still in its ring (from ``start``), and how many slots were
        lost."""
        size = self.ring_size
        written = self.ring_written.mv[worker * _COUNTER_STRIDE]
        index = max(start, written - size)
        lost = index - start
        records: list[Record] = []

        def slot(at: int) -> tuple[int, ...]:
            return _SLOT.unpack_from(self._ring_bytes, (worker * size + at % size) * _SLOT_BYTES)

        while index < written:
            values = slot(index)
            tag = values[0]
            extra = tag & _MAX_EXTRA
            payload: list[int] = []
            whole = tag > 0 and tag >> _EXTRA_BITS == index + 1 and index + extra < written
            for k in range(1, extra + 1 if whole else 0):
                more = slot(index + k)
                if more[0] != -(index + k + 1):
                    whole = False
                    break
                payload.extend(more[1:])
            if not whole:  # overwritten from the front, or torn by a kill
                lost += 1
                index += 1
                continue
            records.append(_decode_record(values, labels, payload))
            index += 1 + extra
        return records, lost

    def release(self) -> None:
        """Drop this object's own views so the arena can unmap its segments."""
        self._ring_bytes.release()
        self._heap_bytes.release()


def _decode_record(
    values: tuple[int, ...], labels: Sequence[Label], payload: list[int]
) -> Record:
    _, seq, t_ns, worker, label, count = values[:6]
    sub, level = values[6 + 2 * MAX_FIELDS :]
    fields: list[tuple[str, object]] = []
    for i in range(count):
        key_word, value = values[6 + 2 * i], values[7 + 2 * i]
        fields.append((labels[key_word & _KEY_MASK].text,
                       _decode_value(FieldType(key_word >> _TYPE_SHIFT), value, labels, payload)))
    return Record(seq, t_ns, worker, label, tuple(fields), sub, level)


def _decode_value(
    kind: FieldType, value: int, labels: Sequence[Label], payload: list[int]
) -> object:
    if kind is FieldType.INT:
        return value
    if kind is FieldType.STR:
        return labels[value].text
    if kind is FieldType.BOOL:
        return bool(value)
    if kind is FieldType.FLOAT:
        return _DOUBLE.unpack(_INT64.pack(value))[0]
    if kind is FieldType.NONE:
        return None
    start, length = value >> _SPAN_SHIFT, value & ((1 << _SPAN_SHIFT) - 1)
    return tuple(payload[start : start + length])


def is_plumbing(frame: FrameType) -> bool:
    """Does ``frame`` run in a module that declares ``PLUMBING = True``? A module registers
    itself as point plumbing that way: no list of file names, no frame depths to keep."""
    return frame.f_globals.get("PLUMBING") is True


def _caller(frame: FrameType) -> FrameType:
    """The first frame outside the harness's point plumbing: the tracker line of the point."""
    while frame.f_back is not None and is_plumbing(frame):
        frame = frame.f_back
    return frame
