"""Recording every point into shared memory, with no text and no I/O on the hot path.

Three pieces, all in shared memory so the coordinator can read them after the
workers are gone, whatever way they ended:

- a **string table**: labels, field names and string values are interned once
  per process (a dict hit afterwards) into a table every process shares, so a
  record holds small ids; the call site of a label is resolved the first time
  the label is seen, by walking out of the harness's own frames;
- one **ring per worker** of fixed-size records (sequence number, monotonic
  time, worker, label id, up to four typed fields); when a ring wraps, the
  loss is counted and reported, never silent;
- the **schedule tape**: for every sequence number, which worker took it at
  which label. It is what a replay follows, so it is indexed by sequence
  number and never wraps; points past its end are counted as not replayable.

A label names one call site: two places that share a label share one
``file:line`` in the log.

A tracker's log call that is not a point (``Runtime.log``) is a ring record
too, stamped with the sequence number of the worker's last point and a
sub-index (1, 2, ...), so merging by (seq, sub) puts it right after the point
it follows; it takes no sequence number and is not a step of the schedule.
"""

from __future__ import annotations

import os
import struct
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.synchronize import Lock as MpLock
from types import FrameType

import numpy as np

from harness.control import FORK
from harness.shm import Arena, SharedArray

MAX_FIELDS = 4
_RECORD = struct.Struct(f"{5 + 2 * MAX_FIELDS + 2}q")  # ..., fields, sub, level
RECORD_WORDS = 16  # 15 used, padded to 128 bytes
_RECORD_BYTES = RECORD_WORDS * 8
_COUNTER_STRIDE = 16  # words between two workers' ring counters
_NO_FIELDS = (0,) * (1 + 2 * MAX_FIELDS + 2)  # count, fields, sub, level of a bare point
_monotonic_ns = time.monotonic_ns
LEVELS = "IWE"  # a record's level is an index into this (klog's severity letters)
_STRING_BYTES = 96
_STRING_WORDS = _STRING_BYTES // 8
_STRING_ENTRY_WORDS = 2 + 2 * _STRING_WORDS  # length, line, text, file
STRING_FLAG = 1 << 40  # set on a field's key id when its value is a string id
BOOL_FLAG = 1 << 41  # set on a field's key id when its value is a bool
_HARNESS_DIR = os.path.dirname(os.path.abspath(__file__))
_TAPE_WORKER_SHIFT = 32


@dataclass(frozen=True)
class Label:
    """An interned string: a point's label with its call site, or a field name or value."""

    text: str
    file: str
    line: int


@dataclass(frozen=True)
class Record:
    """One recorded point, decoded."""

    seq: int
    t_ns: int
    worker: int
    label: int
    fields: tuple[tuple[str, object], ...]
    sub: int = 0  # 0: a point; k >= 1: the k-th log call after point ``seq`` of this worker
    level: int = 0  # index into LEVELS


@dataclass(frozen=True)
class Step:
    """One step of a schedule: which worker took the point, at which label."""

    worker: int
    label: str


@dataclass(frozen=True)
class Recording:
    """Everything recorded in a run, decoded after the workers are gone."""

    labels: tuple[Label, ...]
    records: tuple[Record, ...]  # merged from every worker's ring, in sequence order
    ring_lost: dict[int, int]  # worker -> records overwritten in its ring
    steps: tuple[Step, ...]  # the schedule, from sequence number 0 without gaps
    tape_lost: int  # points past the end of the tape (not replayable)
    mono0_ns: int
    wall0_ns: int
    logs: tuple[Record, ...] = ()  # log calls between points, in (seq, sub) order

    def wall_time(self, t_ns: int) -> float:
        """Wall-clock seconds of a record's monotonic timestamp."""
        return (self.wall0_ns + (t_ns - self.mono0_ns)) / 1e9


class Recorder:
    """Shared recording state; built before the fork, then ``bind``-ed inside each worker."""

    def __init__(
        self, arena: Arena, workers: int, ring_size: int, tape_size: int, max_strings: int = 4096
    ) -> None:
        self.workers = workers
        self.ring_size = ring_size
        self.tape_size = tape_size
        self.max_strings = max_strings
        self.strings: SharedArray = arena.array(
            "recording.strings", max_strings * _STRING_ENTRY_WORDS
        )
        self.string_count: SharedArray = arena.array("recording.string_count", 1)
        self.rings: SharedArray = arena.array(
            "recording.rings", max(1, workers) * ring_size * RECORD_WORDS
        )
        # one counter per 128 bytes: workers bump theirs at every point, and counters
        # sharing a cache line would bounce it between the CPUs
        self.ring_written: SharedArray = arena.array(
            "recording.ring_written", max(1, workers) * _COUNTER_STRIDE
        )
        # entry + 1 per sequence number, so that 0 (a fresh page) means "not written"
        self.tape: SharedArray = arena.array("recording.tape", tape_size)
        self.clock: SharedArray = arena.array("recording.clock", 2)
        self.clock.mv[0] = time.monotonic_ns()
        self.clock.mv[1] = time.time_ns()
        self._lock: MpLock = FORK.Lock()
        self._ids: dict[str, int] = {}
        self._last_log = (-1, -1, 0)  # (worker, seq, sub) of this process's latest log call
        self._ring_bytes = self.rings.mv.cast("B")
        self._tape_mv = self.tape.mv
        self._written_mv = self.ring_written.mv

    # -- interning ------------------------------------------------------------------------
    def intern(self, text: str, call_site: bool = False) -> int:
        """The shared id of ``text``; a label's call site is resolved on first sight."""
        found = self._ids.get(text)
        if found is not None:
            return found
        file, line = _call_site() if call_site else ("", 0)
        with self._lock:
            existing = self._find(text)
            ident = existing if existing >= 0 else self._append(text, file, line)
        self._ids[text] = ident
        return ident

    def _find(self, text: str) -> int:
        for ident in range(self.string_count.mv[0]):
            if self._decode_string(ident).text == text:
                return ident
        return -1

    def _append(self, text: str, file: str, line: int) -> int:
        ident = self.string_count.mv[0]
        if ident >= self.max_strings:
            raise OverflowError(f"more than {self.max_strings} distinct labels and field names")
        base = ident * _STRING_ENTRY_WORDS
        raw_text = text.encode()[:_STRING_BYTES]
        raw_file = file.encode()[:_STRING_BYTES]
        self.strings.mv[base] = len(raw_text) | (len(raw_file) << 16)
        self.strings.mv[base + 1] = line
        words = self.strings.np
        words[base + 2 : base + 2 + _STRING_WORDS] = np.frombuffer(
            raw_text.ljust(_STRING_BYTES, b"\0"), dtype=np.int64
        )
        words[base + 2 + _STRING_WORDS : base + _STRING_ENTRY_WORDS] = np.frombuffer(
            raw_file.ljust(_STRING_BYTES, b"\0"), dtype=np.int64
        )
        self.string_count.mv[0] = ident + 1
        return ident

    def label(self, ident: int) -> Label:
        """The interned string ``ident`` (the controlled-mode coordinator reads parked labels)."""
        return self._decode_string(ident)

    def _decode_string(self, ident: int) -> Label:
        base = ident * _STRING_ENTRY_WORDS
        lengths = self.strings.mv[base]
        words = self.strings.np
        text = words[base + 2 : base + 2 + _STRING_WORDS].tobytes()[: lengths & 0xFFFF]
        file = words[base + 2 + _STRING_WORDS : base + _STRING_ENTRY_WORDS].tobytes()[
            : lengths >> 16
        ]
        return Label(text.decode(errors="replace"), file.decode(errors="replace"),
                     self.strings.mv[base + 1])

    # -- hot path -------------------------------------------------------------------------
    def record(self, seq: int, worker: int, label: str, fields: dict[str, object]) -> None:
        """The runtime's point sink: one ring record and one tape entry, no formatting."""
        label_id = self._ids.get(label)
        if label_id is None:
            label_id = self.intern(label, call_site=True)
        if seq < self.tape_size:
            self._tape_mv[seq] = ((worker << _TAPE_WORKER_SHIFT) | label_id) + 1
        written_mv = self._written_mv
        written = written_mv[worker * _COUNTER_STRIDE]
        written_mv[worker * _COUNTER_STRIDE] = written + 1
        offset = (worker * self.ring_size + written % self.ring_size) * _RECORD_BYTES
        if fields:
            _RECORD.pack_into(self._ring_bytes, offset, seq, _monotonic_ns(), worker, label_id,
                              *self._pack(fields), 0, 0)
        else:
            _RECORD.pack_into(self._ring_bytes, offset, seq, _monotonic_ns(), worker, label_id,
                              *_NO_FIELDS)

    def log(
        self, seq: int, worker: int, message: str, level: int, fields: Mapping[str, object]
    ) -> None:
        """The runtime's log sink: a ring record after point ``seq``; no tape entry."""
        if worker < 0:
            return
        last_worker, last_seq, last_sub = self._last_log
        sub = last_sub + 1 if (last_worker, last_seq) == (worker, seq) else 1
        self._last_log = (worker, seq, sub)
        label_id = self._ids.get(message)
        if label_id is None:
            label_id = self.intern(message, call_site=True)
        written_mv = self._written_mv
        written = written_mv[worker * _COUNTER_STRIDE]
        written_mv[worker * _COUNTER_STRIDE] = written + 1
        offset = (worker * self.ring_size + written % self.ring_size) * _RECORD_BYTES
        _RECORD.pack_into(self._ring_bytes, offset, seq, _monotonic_ns(), worker, label_id,
                          *self._pack(fields), sub, level)

    def _pack(self, fields: Mapping[str, object]) -> list[int]:
        """Field count, then (key id with its type flag, value word) per field, zero-padded."""
        ids = self._ids
        packed = [0] * (1 + 2 * MAX_FIELDS)
        count = 0
        for key, raw in fields.items():
            if count == MAX_FIELDS:
                break
            key_id = ids.get(key)
            if key_id is None:
                key_id = self.intern(key)
            if type(raw) is int:  # the common case first; bool is an int subclass
                value = raw
            elif isinstance(raw, bool):
                key_id |= BOOL_FLAG
                value = int(raw)
            else:
                try:
                    value = int(raw)  # type: ignore[call-overload]
                except (TypeError, ValueError):
                    key_id |= STRING_FLAG
                    value = self.intern(str(raw))
            count += 1
            packed[2 * count - 1] = key_id
            packed[2 * count] = value
        packed[0] = count
        return packed

    # -- after the run --------------------------------------------------------------------
    def collect(self, points: int) -> Recording:
        """Decode everything; ``points`` is how many sequence numbers the run handed out."""
        labels = tuple(self._decode_string(i) for i in range(self.string_count.mv[0]))
        records: list[Record] = []
        logs: list[Record] = []
        lost: dict[int, int] = {}
        for worker in range(self.workers):
            written = self.ring_written.mv[worker * _COUNTER_STRIDE]
            if written > self.ring_size:
                lost[worker] = written - self.ring_size
            first = max(0, written - self.ring_size)
            for index in range(first, written):
                slot = worker * self.ring_size + index % self.ring_size
                values = _RECORD.unpack_from(self._ring_bytes, slot * RECORD_WORDS * 8)
                decoded = _decode_record(values, labels)
                (logs if decoded.sub else records).append(decoded)
        records.sort(key=lambda r: r.seq)
        logs.sort(key=lambda r: (r.seq, r.sub))
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

    def release(self) -> None:
        """Drop this object's own views so the arena can unmap its segments."""
        self._ring_bytes.release()


def _decode_record(values: tuple[int, ...], labels: tuple[Label, ...]) -> Record:
    seq, t_ns, worker, label, count = values[:5]
    sub, level = values[5 + 2 * MAX_FIELDS :]
    fields: list[tuple[str, object]] = []
    for i in range(count):
        key_id, value = values[5 + 2 * i], values[6 + 2 * i]
        key = labels[key_id & 0xFFFFFFFF].text
        if key_id & STRING_FLAG:
            fields.append((key, labels[value].text))
        elif key_id & BOOL_FLAG:
            fields.append((key, bool(value)))
        else:
            fields.append((key, value))
    return Record(seq, t_ns, worker, label, tuple(fields), sub, level)


def _in_harness(filename: str) -> bool:
    """Is ``filename`` in the harness package or one of its subpackages (controlled mode's)?"""
    return os.path.abspath(filename).startswith(_HARNESS_DIR + os.sep)


def _call_site() -> tuple[str, int]:
    """The first frame outside the harness package: the tracker line that made the point."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if not _in_harness(frame.f_code.co_filename):
            return os.path.basename(frame.f_code.co_filename), frame.f_lineno
        frame = frame.f_back
    return "", 0
