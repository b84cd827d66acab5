"""The pieces controlled mode rests on, without worker processes: restoring shared arrays,
fresh copies of process-local state, lock names, phase points, and the gate protocol."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import pytest

from shmstress.controlled.local_state import Pristine, lock_names
from shmstress.core.control import ControlBlock, Phase
from shmstress.core.runtime import Runtime
from shmstress.core.shm import Arena
from shmstress.core.workers import WorkerInfo


def test_a_snapshot_restores_chosen_arrays_and_leaves_the_others() -> None:
    with Arena() as arena:
        kept = arena.array("tracker.a", 5, fill=7)
        skipped = arena.array("controlled.b", 3)
        other = arena.array("tracker.c", 100)
        snapshot = arena.snapshot(lambda name: not name.startswith("controlled."))
        assert len(snapshot.ranges) == 2  # a and c are not adjacent: b lies between
        kept.np[:] = 1
        other.np[50] = 9
        skipped.np[:] = 4
        arena.restore(snapshot)
        assert kept.np.tolist() == [7] * 5
        assert other.np[50] == 0
        assert skipped.np.tolist() == [4, 4, 4]


def test_adjacent_arrays_become_one_range() -> None:
    with Arena() as arena:
        for name in ("x", "y", "z"):
            arena.array(name, 3)
        assert len(arena.snapshot(lambda name: True).ranges) == 1


class _Part:
    def __init__(self, runtime: Runtime, arena: Arena) -> None:
        self.lock = runtime.lock("part lock")
        self.shared = arena.array("part.shared", 2)
        self.seen: list[int] = []
        self.queue: deque[int] = deque()
        self.callback = self.note

    def note(self, value: int) -> None:
        self.seen.append(value)


class _Whole:
    def __init__(self, runtime: Runtime, arena: Arena) -> None:
        self.runtime = runtime
        self.part = _Part(runtime, arena)
        self.cursor = 0
        self.key: Callable[[int], int] = abs


@pytest.mark.parametrize("picklable", [True, False])
def test_fresh_copies_share_shared_state_but_not_local_state(picklable: bool) -> None:
    """Unpickled from an image made once, or deep-copied where the state cannot be pickled
    (a lambda): the same copies either way."""
    with Arena() as arena:
        runtime = Runtime(ControlBlock(arena, 1, 1, 4))
        whole = _Whole(runtime, arena)
        if not picklable:
            whole.key = lambda value: -value
        pristine = Pristine(whole)
        assert pristine.in_place is None  # a list and a deque change in place: copied
        assert (pristine.image is not None) == picklable
        first = pristine.fresh()
        first.cursor = 5
        first.part.callback(3)
        first.part.queue.append(1)
        first.part.shared.np[0] = 42
        second = pristine.fresh()
        assert second.cursor == 0 and second.part.seen == [] and not second.part.queue
        assert second.part.shared is whole.part.shared and second.part.shared.np[0] == 42
        assert second.part.lock is whole.part.lock and second.runtime is runtime
        assert second.part.callback.__self__ is second.part  # bound methods follow the copy
        assert lock_names(whole) == {0: "part lock"}


class _Plain:
    def __init__(self, runtime: Runtime, arena: Arena) -> None:
        self.lock = runtime.lock("plain lock")
        self.shared = arena.array("plain.shared", 1)
        self.cursor = 0
        self.callback = self.bump

    def bump(self) -> None:
        self.cursor += 1


def test_a_graph_of_plain_objects_is_restored_in_place() -> None:
    with Arena() as arena:
        runtime = Runtime(ControlBlock(arena, 1, 1, 4))
        plain = _Plain(runtime, arena)
        pristine = Pristine(plain)
        assert pristine.in_place is not None and pristine.image is None
        first = pristine.fresh()
        first.callback()
        first.extra = 1  # type: ignore[attr-defined]
        first.shared.np[0] = 7
        second = pristine.fresh()
        assert second.cursor == 0 and not hasattr(second, "extra")
        assert second.shared.np[0] == 7 and second.lock is plain.lock
        second.callback()
        assert second.cursor == 1  # the bound method still reaches the restored object


def test_phase_changes_note_where_drain_and_stop_began() -> None:
    with Arena() as arena:
        control = ControlBlock(arena, 1, 1, 1)
        assert control.phase_changes == ()
        for _ in range(5):
            control.next_seq()
        control.set_phase(Phase.DRAIN)
        control.next_seq()
        control.set_phase(Phase.STOP)
        assert control.phase_changes == (5, 6)


class _AcquireGate:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def before_point(self, label: str) -> None:
        self.seen.append((label, -1))

    def before_acquire(self, label: str, lock: int) -> None:
        self.seen.append((label, lock))


class _PointGate:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def before_point(self, label: str) -> None:
        self.seen.append(label)


def test_an_acquire_gate_learns_the_lock_and_a_plain_gate_still_sees_the_point() -> None:
    with Arena() as arena:
        runtime = Runtime(ControlBlock(arena, 1, 1, 4))
        runtime.become(0)
        first, second = runtime.lock("first"), runtime.lock("second")
        gate = _AcquireGate()
        runtime.gate = gate
        runtime.acquire_gate = gate
        with second.held("take second"), second.held("nested, not a point"):
            runtime.point("plain")
        assert gate.seen == [("take second", second.slot), ("plain", -1)]
        plain = _PointGate()
        runtime.gate, runtime.acquire_gate = plain, None
        with first.held("take first"):
            pass
        assert plain.seen == ["take first"]


def test_worker_info_without_pid_reads_as_role_and_number() -> None:
    assert WorkerInfo(3, "gatherer", 0).describe() == "gatherer #1"
