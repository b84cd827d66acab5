"""Recording points into shared memory: rings, overflow accounting, the schedule tape."""

from __future__ import annotations

import os
import sys

from harness.config import RunConfig
from harness.control import ControlBlock
from harness.recording import Recorder
from harness.runner import run
from harness.runtime import Runtime
from harness.shm import Arena


def _runtime_with_recorder(ring_size: int) -> tuple[Arena, Runtime, Recorder]:
    arena = Arena()
    control = ControlBlock(arena, workers=2, max_violations=1, max_locks=4)
    runtime = Runtime(control)
    recorder = Recorder(arena, workers=2, ring_size=ring_size, tape_size=64)
    runtime.sink = recorder.record
    return arena, runtime, recorder


def test_records_carry_typed_fields_and_the_call_site() -> None:
    arena, runtime, recorder = _runtime_with_recorder(16)
    try:
        runtime.become(1)
        line = sys._getframe().f_lineno + 1
        runtime.point("hello", claim=3, flag=True, name="abc")  # this line is the call site
        recording = recorder.collect(runtime.control.points)
        (record,) = recording.records
        assert record.worker == 1 and record.seq == 0
        assert record.fields == (("claim", 3), ("flag", True), ("name", "abc"))
        label = recording.labels[record.label]
        assert (label.text, label.file, label.line) == ("hello", "test_recording.py", line)
    finally:
        recorder.release()
        arena.close()


def test_ring_overflow_is_counted_and_the_tape_keeps_every_step() -> None:
    arena, runtime, recorder = _runtime_with_recorder(16)
    try:
        for i in range(40):
            runtime.become(i % 2)
            runtime.point(f"step-{i % 3}")
        recording = recorder.collect(runtime.control.points)
        assert recording.ring_lost == {0: 4, 1: 4}
        assert len(recording.records) == 32
        assert [r.seq for r in recording.records] == sorted(r.seq for r in recording.records)
        assert [(s.worker, s.label) for s in recording.steps] == [
            (i % 2, f"step-{i % 3}") for i in range(40)
        ]
        assert recording.tape_lost == 0
    finally:
        recorder.release()
        arena.close()


def test_labels_interned_in_different_processes_share_ids() -> None:
    arena, runtime, recorder = _runtime_with_recorder(16)
    try:
        pid = os.fork()
        if pid == 0:
            runtime.become(1)
            runtime.point("from the child")
            os._exit(0)
        os.waitpid(pid, 0)
        runtime.become(0)
        runtime.point("from the child")
        recording = recorder.collect(runtime.control.points)
        assert [s.label for s in recording.steps] == ["from the child"] * 2
        assert len({r.label for r in recording.records}) == 1
    finally:
        recorder.release()
        arena.close()


def test_a_real_run_records_its_whole_schedule_in_sequence_order() -> None:
    result = run(RunConfig(variant="gather-unchecked", duration=15, seed=4))
    assert result.recording is not None
    recording = result.recording
    assert len(recording.steps) == result.points
    assert {s.worker for s in recording.steps} == {w.worker_id for w in result.workers}
    merged = [(r.worker, recording.labels[r.label].text) for r in recording.records]
    tail = [(s.worker, s.label) for s in recording.steps[-len(merged):]]
    assert merged == tail
