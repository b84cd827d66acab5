"""Recording points into shared memory: typed fields, call sites, rings, overflow, the tape."""

from __future__ import annotations

import enum
import os
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest

from shmstress.core.config import RunConfig
from shmstress.core.control import ControlBlock
from shmstress.core.errors import RecordFieldError
from shmstress.core.runtime import Runtime
from shmstress.core.shm import Arena
from shmstress.core.trace import Recording
from shmstress.free.runner import run
from shmstress.record import recorder as recording_module
from shmstress.record.recorder import SLOT_WORDS, Recorder


@dataclass
class _Rig:
    arena: Arena
    runtime: Runtime
    recorder: Recorder

    def collect(self) -> Recording:
        return self.recorder.collect(self.runtime.control.points)


def _rig(ring_size: int = 16, max_strings: int = 4096) -> _Rig:
    arena = Arena()
    control = ControlBlock(arena, workers=2, max_violations=1, max_locks=4)
    runtime = Runtime(control)
    recorder = Recorder(arena, workers=2, ring_size=ring_size, tape_size=64,
                        max_strings=max_strings)
    runtime.sink = recorder.record
    runtime.log_sink = recorder.log
    runtime.become(0)
    return _Rig(arena, runtime, recorder)


@pytest.fixture
def rig() -> Iterator[_Rig]:
    made = _rig()
    try:
        yield made
    finally:
        made.recorder.release()
        made.arena.close()


def _line() -> int:
    """The caller's next line: where the point under test is made."""
    return sys._getframe(1).f_lineno + 1


def test_records_carry_typed_fields_and_the_call_site(rig: _Rig) -> None:
    rig.runtime.become(1)
    line = _line()
    rig.runtime.point("hello", claim=3, flag=True, name="abc")  # this line is the call site
    recording = rig.collect()
    (record,) = recording.records
    assert record.worker == 1 and record.seq == 0
    assert record.fields == (("claim", 3), ("flag", True), ("name", "abc"))
    label = recording.labels[record.label]
    assert (label.text, label.file, label.line) == ("hello", "test_recording.py", line)


class _Color(enum.IntEnum):
    RED = 2


def test_field_values_come_back_with_their_type(rig: _Rig) -> None:
    point = rig.runtime.point
    point("scalars", ratio=0.75, name="0553", nothing=None, low=-(1 << 63))
    point("int-likes", color=_Color.RED, count=np.int64(7), flag=np.bool_(True),
          half=np.float32(0.5))
    point("sequences", empty=(), listed=[5, 6], devices=np.array([3, 1, 4]),
          long=tuple(range(40)))
    scalars, int_likes, sequences = (dict(r.fields) for r in rig.collect().records)
    assert scalars == {"ratio": 0.75, "name": "0553", "nothing": None, "low": -(1 << 63)}
    assert type(scalars["name"]) is str and type(scalars["ratio"]) is float
    assert int_likes == {"color": 2, "count": 7, "flag": True, "half": 0.5}
    assert [type(v) for v in int_likes.values()] == [int, int, bool, float]
    assert sequences == {"empty": (), "listed": (5, 6), "devices": (3, 1, 4),
                         "long": tuple(range(40))}


def test_long_texts_stay_whole_and_distinct(rig: _Rig) -> None:
    prefix = "a label longer than any fixed-size slot would hold, " * 3
    rig.runtime.point(prefix + "one", value=prefix + "first")
    rig.runtime.point(prefix + "two", value=prefix + "second")
    recording = rig.collect()
    assert [(recording.labels[r.label].text, r.fields) for r in recording.records] == [
        (prefix + "one", (("value", prefix + "first"),)),
        (prefix + "two", (("value", prefix + "second"),)),
    ]


def test_one_label_at_two_call_sites_shows_both(rig: _Rig) -> None:
    first = _line()
    rig.runtime.point("retry")
    rig.runtime.point("retry")
    rig.runtime.point("other", state="retry later")  # the label's text seen as a value first
    later = _line()
    rig.runtime.point("retry later")
    recording = rig.collect()
    sites = [(recording.labels[r.label].text, recording.labels[r.label].line)
             for r in recording.records]
    assert sites == [("retry", first), ("retry", first + 1), ("other", first + 2),
                     ("retry later", later)]
    assert [s.label for s in recording.steps] == ["retry", "retry", "other", "retry later"]


def test_a_call_site_in_different_processes_shares_its_id(rig: _Rig) -> None:
    pid = os.fork()
    if pid == 0:
        rig.runtime.become(1)
        _point_from_one_site(rig.runtime)
        os._exit(0)
    os.waitpid(pid, 0)
    _point_from_one_site(rig.runtime)
    recording = rig.collect()
    assert [s.label for s in recording.steps] == ["from the child"] * 2
    assert len({r.label for r in recording.records}) == 1


def _point_from_one_site(runtime: Runtime) -> None:
    runtime.point("from the child")


@pytest.mark.parametrize(("fields", "problem"), [
    ({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}, "has more than 4 fields"),
    ({"claims": {3: 5}}, "has field claims={3: 5} of type dict"),
    ({"devices": [1.5, 2.0]}, "of type list"),
    ({"devices": [[1], [2]]}, "of type list"),
    ({"huge": 1 << 63}, "has an int field outside int64"),
])
def test_unsupported_fields_are_refused_at_their_call_site(
    rig: _Rig, fields: dict[str, object], problem: str
) -> None:
    with pytest.raises(RecordFieldError) as refused:
        line = _line()
        rig.runtime.point("bad point", **fields)
    assert str(refused.value).startswith(f"test_recording.py:{line}: the point or log call "
                                         "'bad point' ")
    assert problem in str(refused.value)
    assert rig.collect().records == ()  # nothing half-written, the ring's counter untouched


def test_a_sequence_longer_than_the_ring_holds_is_refused(rig: _Rig) -> None:
    with pytest.raises(RecordFieldError, match="300 sequence items, more than a record holds"):
        rig.runtime.point("big", devices=tuple(range(300)))


def test_a_full_string_table_is_an_error_not_a_loss() -> None:
    small = _rig(max_strings=8)
    try:
        with pytest.raises(RecordFieldError, match="string table is full"):
            for i in range(10):
                small.runtime.point("named", name=f"value {i}")
    finally:
        small.recorder.release()
        small.arena.close()


def test_a_named_nested_acquire_is_logged_with_its_fields_at_its_site(rig: _Rig) -> None:
    lock = rig.runtime.lock("one")
    with lock.held("operation"):
        line = _line()
        with lock.held("inner step", claim=3):
            pass
        with lock:  # unnamed: nothing to log
            pass
    recording = rig.collect()
    assert [recording.labels[r.label].text for r in recording.records] == ["operation"]
    (inner,) = recording.logs
    label = recording.labels[inner.label]
    assert (label.text, label.line, inner.fields) == ("inner step", line, (("claim", 3),))
    assert (inner.seq, inner.sub) == (recording.records[0].seq, 1)


def test_every_way_in_names_the_tracker_line_however_deep_the_plumbing(rig: _Rig) -> None:
    """A lock's acquire() goes through one more plumbing frame than held(); a runtime log
    through fewer than a point: each is found by the walk out of the plumbing modules."""
    lock = rig.runtime.lock("one")
    lines = [_line()]
    lock.acquire("taken by acquire()")
    lines.append(_line())
    rig.runtime.log("noted")
    lock.release()
    lines.append(_line())
    with lock.held("taken by held()"):
        pass
    recording = rig.collect()
    sites = [(recording.labels[r.label].text, recording.labels[r.label].file,
              recording.labels[r.label].line)
             for r in sorted((*recording.records, *recording.logs), key=lambda r: (r.seq, r.sub))]
    assert sites == [("taken by acquire()", "test_recording.py", lines[0]),
                     ("noted", "test_recording.py", lines[1]),
                     ("taken by held()", "test_recording.py", lines[2])]


def test_ring_overflow_is_counted_and_the_tape_keeps_every_step(rig: _Rig) -> None:
    for i in range(40):
        rig.runtime.become(i % 2)
        rig.runtime.point(f"step-{i % 3}")
    recording = rig.collect()
    assert recording.ring_lost == {0: 4, 1: 4}
    assert len(recording.records) == 32
    assert [r.seq for r in recording.records] == sorted(r.seq for r in recording.records)
    assert [(s.worker, s.label) for s in recording.steps] == [
        (i % 2, f"step-{i % 3}") for i in range(40)
    ]
    assert recording.tape_lost == 0


def test_a_record_with_a_sequence_is_kept_or_lost_whole_across_the_wrap(rig: _Rig) -> None:
    for _ in range(14):
        rig.runtime.point("bare")
    rig.runtime.point("gathered", devices=tuple(range(40)))  # 3 more slots: wraps to 0 and 1
    recording = rig.collect()
    assert recording.records[-1].fields == (("devices", tuple(range(40))),)
    assert (len(recording.records), recording.ring_lost) == (13, {0: 2})
    for _ in range(13):  # overwrites its first slot, not its last three
        rig.runtime.point("bare")
    recording = rig.collect()
    assert [recording.labels[r.label].text for r in recording.records] == ["bare"] * 13
    assert recording.ring_lost == {0: 18}


def test_a_worker_killed_mid_record_leaves_no_stale_record(rig: _Rig) -> None:
    pid = os.fork()
    if pid == 0:
        rig.runtime.become(1)
        for _ in range(3):
            rig.runtime.point("before the kill", n=1)
        # Dies while building its fourth record, after reading the ring's counter.
        recording_module._monotonic_ns = lambda: os._exit(0)
        rig.runtime.point("never recorded", n=1)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    recording = rig.collect()
    assert [recording.labels[r.label].text for r in recording.records] == ["before the kill"] * 3
    assert recording.ring_lost == {}


def test_a_slot_rewritten_without_its_counter_is_dropped_and_counted(rig: _Rig) -> None:
    for _ in range(20):
        rig.runtime.point("kept", n=1)
    # What a worker killed just after writing its 21st record leaves behind: the slot of
    # record 4 (the ring holds 4..19) overwritten, the counter still saying 20.
    slot = 20 % rig.recorder.ring_size * SLOT_WORDS
    rig.recorder.rings.np[slot : slot + SLOT_WORDS] = [21 << 8, 999, *[0] * (SLOT_WORDS - 2)]
    recording = rig.collect()
    assert [r.seq for r in recording.records] == list(range(5, 20))
    assert recording.ring_lost == {0: 5}


def test_a_real_run_records_its_whole_schedule_in_sequence_order() -> None:
    result = run(RunConfig(tracker="dra", variant="gather-unchecked", duration=15, seed=4))
    assert result.recording is not None
    recording = result.recording
    assert len(recording.steps) == result.points
    # every worker's ring is merged, whole: as many steps of each as it took points (a worker
    # that a loaded machine kept from its first point before the violation stopped the run
    # took none; the run is not about start-up)
    taken = {worker: n for worker, n in result.worker_points.items() if n}
    assert Counter(s.worker for s in recording.steps) == taken
    assert len(taken) > 1 and set(taken) <= {w.worker_id for w in result.workers}
    merged = [(r.worker, recording.labels[r.label].text) for r in recording.records]
    tail = [(s.worker, s.label) for s in recording.steps[-len(merged):]]
    assert merged == tail
