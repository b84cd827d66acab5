from __future__ import annotations

import pytest

from shmstress.core.control import ControlBlock
from shmstress.core.runtime import Runtime, StopRun
from shmstress.core.shm import Arena


@pytest.fixture
def runtime() -> Runtime:
    arena = Arena()
    control = ControlBlock(arena, workers=2, max_violations=4, max_locks=8)
    rt = Runtime(control, ["inv-a", "inv-b"], stop_on_violation=False, checked=["inv-a"])
    rt.declare_invariant_fields("inv-a", ("x", "y"))
    rt.attach(0, seed=1)
    yield rt
    arena.close()


def test_points_take_consecutive_global_sequence_numbers(runtime: Runtime) -> None:
    seen = []
    runtime.sink = lambda seq, worker, label, fields: seen.append((seq, worker, label, fields))
    assert runtime.point("a", k=1) == 0
    runtime.become(1)
    assert runtime.point("b") == 1
    assert seen == [(0, 0, "a", {"k": 1}), (1, 1, "b", {})]
    assert runtime.control.points == 2


def test_instrumented_lock_is_reentrant_and_only_outer_acquire_is_a_point(
    runtime: Runtime,
) -> None:
    lock = runtime.lock("L")
    labels = []
    runtime.sink = lambda seq, worker, label, fields: labels.append(label)
    with lock.held("outer"):
        assert lock.owner == 0
        with lock.held("inner"):
            assert lock.owner == 0
        assert lock.owner == 0
    assert lock.owner == -1
    assert labels == ["outer"]


def test_abort_unwinds_at_next_point_and_releases_locks(runtime: Runtime) -> None:
    lock = runtime.lock("L")
    with pytest.raises(StopRun), lock.held("outer"):
        runtime.control.abort()
        runtime.point("next")
    assert lock.owner == -1


def test_violations_are_recorded_with_fields_and_unchecked_ones_ignored(
    runtime: Runtime,
) -> None:
    runtime.point("p")
    runtime.violation("inv-a", y=2, x=1)
    runtime.violation("inv-b", z=3)
    records = runtime.control.violation_records()
    assert runtime.control.violation_count == 1
    assert records[0].invariant == 0
    assert records[0].fields == (1, 2)
    assert records[0].worker == 0
    assert not runtime.control.aborted


def test_violation_slots_overflow_is_counted(runtime: Runtime) -> None:
    for i in range(10):
        runtime.violation("inv-a", x=i, y=i)
    assert runtime.control.violation_count == 10
    assert [r.fields[0] for r in runtime.control.violation_records()] == [0, 1, 2, 3]


def test_stop_on_violation_aborts() -> None:
    with Arena() as arena:
        control = ControlBlock(arena, workers=1, max_violations=1, max_locks=1)
        rt = Runtime(control, ["inv"], stop_on_violation=True)
        rt.violation("inv")
        assert control.aborted
