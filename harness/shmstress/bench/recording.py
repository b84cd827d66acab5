"""What recording costs per event, measured in this process on the real hot path.

The free-mode ratio (points/s with recording on vs off) says whether recording
hides races; this says where the time goes: the same ``Runtime.point`` calls
with and without the recorder as sink, the difference divided by the calls.
Every recorded point takes the path of a real run's: its call site looked up,
its step stored on the schedule tape (the tape is as long as the batch, and
the sequence counter starts over for each batch), its record written into a
ring of the run's default size, which wraps as a long run's does.
"""

from __future__ import annotations

import time

from shmstress.core.config import DEFAULT_RING_SIZE
from shmstress.core.control import SEQ, ControlBlock
from shmstress.core.runtime import Runtime
from shmstress.core.shm import Arena
from shmstress.record.recorder import Recorder


def recording_ns_per_event(events: int = 200_000, rounds: int = 3) -> float:
    """Nanoseconds one recorded point adds (two int fields), best of ``rounds``."""
    arena = Arena()
    recorder: Recorder | None = None
    try:
        control = ControlBlock(arena, workers=1, max_violations=1, max_locks=1)
        runtime = Runtime(control)
        runtime.become(0)
        recorder = Recorder(arena, workers=1, ring_size=DEFAULT_RING_SIZE, tape_size=events)
        best = float("inf")
        for _ in range(rounds):
            runtime.sink = None
            plain = _time_points(runtime, events)
            runtime.sink = recorder.record
            recorded = _time_points(runtime, events)
            best = min(best, (recorded - plain) / events)
        return max(best, 0.0)
    finally:
        if recorder is not None:
            recorder.release()
        arena.close()


def _time_points(runtime: Runtime, events: int) -> int:
    runtime.control.control.mv[SEQ] = 0  # every recorded point lands on the tape
    point = runtime.point
    t0 = time.perf_counter_ns()
    for i in range(events):
        point("bench point", claim=i, device=3)
    return time.perf_counter_ns() - t0
