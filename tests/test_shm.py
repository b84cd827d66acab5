from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from shmstress.core.control import FORK
from shmstress.core.errors import ArenaFrozenError, SegmentError
from shmstress.core.shm import (
    POSIX_SHM_DIR,
    SHM_DIR,
    Arena,
    live_segments,
    segment_name,
    sweep_segments_of,
    sweep_stale_segments,
)
from tests.helpers import segments_left_by_us


def test_arena_names_segments_after_owner_and_unlinks_them() -> None:
    with Arena(segment_bytes=4096) as arena:
        a = arena.array("a", 10, fill=7)
        b = arena.array("b", 1000)  # does not fit next to a: a second segment
        assert list(a.np) == [7] * 10
        a.mv[3] = 42
        assert a.np[3] == 42
        assert b.np.sum() == 0
        names = [s.name for s in arena.segments]
        tokens = [name.split("-")[3] for name in names]  # fresh for each name: unguessable
        assert names == [segment_name(os.getpid(), index, random_part=token)
                         for index, token in enumerate(tokens)]
        assert len(set(tokens)) == 2 and all(len(token) == 16 for token in tokens)
        assert all((SHM_DIR / n).exists() for n in names)
    assert not any((SHM_DIR / n).exists() for n in names)


def test_arena_rejects_duplicates_bad_lengths_and_late_allocation() -> None:
    with Arena() as arena:
        arena.array("x", 1)
        with pytest.raises(SegmentError):
            arena.array("x", 1)
        with pytest.raises(SegmentError):
            arena.array("y", 0)
        arena.freeze()
        with pytest.raises(ArenaFrozenError):
            arena.array("z", 1)


def test_forked_child_sees_writes_through_shared_memory() -> None:
    with Arena() as arena:
        cell = arena.array("cell", 1)
        pid = os.fork()
        if pid == 0:
            cell.mv[0] = 1234
            os._exit(0)
        os.waitpid(pid, 0)
        assert cell.mv[0] == 1234


def test_sweeper_removes_segments_of_dead_owners_only() -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    stale = SHM_DIR / segment_name(dead_pid, 0)
    stale.write_bytes(b"x")
    with Arena() as arena:
        arena.array("live", 1)
        live_name = arena.segments[0].name
        removed = sweep_stale_segments()
        assert stale.name in removed
        assert not stale.exists()
        assert live_name in live_segments()


def test_a_parent_sweeps_the_segments_of_its_own_dead_processes_only() -> None:
    pids = []
    for _ in range(2):
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
        pids.append(int(dead.stdout))
    mine, other = (SHM_DIR / segment_name(pid, 0) for pid in pids)
    mine.write_bytes(b"x")
    other.write_bytes(b"x")
    try:
        assert sweep_segments_of([pids[0], os.getpid()]) == [mine.name]
        assert not mine.exists() and other.exists()  # not ours to sweep, though stale
    finally:
        other.unlink(missing_ok=True)
        mine.unlink(missing_ok=True)


def test_leak_check_blames_our_segments_and_spares_other_live_runs() -> None:
    """The suite's leak check must flag what this process (or a dead child) left,
    but not a segment of another live process such as a parallel pytest worker."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    before = live_segments()
    names = {
        "mine": segment_name(os.getpid(), 990),
        "dead child": segment_name(int(dead.stdout), 991),
        "other live run": segment_name(other.pid, 992),
    }
    try:
        for name in names.values():
            (SHM_DIR / name).touch()
        # `other` is our child here, so it counts as ours; once it is someone else's
        # (below, a pid that is alive but not in our tree) it must not.
        assert set(segments_left_by_us(before)) == set(names.values())
        (SHM_DIR / names["other live run"]).unlink()
        foreign = segment_name(1, 993)  # pid 1 is alive and never our child
        (SHM_DIR / foreign).touch()
        names["foreign"] = foreign
        assert set(segments_left_by_us(before)) == {names["mine"], names["dead child"]}
    finally:
        other.kill()
        other.wait()
        for name in names.values():
            (SHM_DIR / name).unlink(missing_ok=True)


def test_close_unmaps_unless_a_view_is_held_outside_the_arena() -> None:
    arena = Arena(segment_bytes=4096)
    a = arena.array("a", 10, fill=3)
    assert arena.close() == 0
    assert a.np.size == 0
    with pytest.raises(IndexError):
        a.mv[0]  # after close a stale view reads nothing, not freed memory

    arena = Arena(segment_bytes=4096)
    held = arena.array("b", 10, fill=5).np
    assert arena.close() == 1  # the caller's numpy view keeps the mapping alive
    assert list(held) == [5] * 10


def test_a_named_arena_is_attached_by_name_with_its_semaphores() -> None:
    """What a fresh host does: map the arrays and open the semaphores from the layout; the
    names are gone once unlinked, and the semaphores still work between the two."""
    with Arena.named() as arena:
        data = arena.array("data", 4, fill=3)
        made = arena.semaphores.semaphore()
        arena.semaphores.lock()
        layout = arena.layout()
        names = [POSIX_SHM_DIR / f"sem.{name.lstrip('/')}" for name in layout.semaphores]
        assert len(names) == 2 and all(path.exists() for path in names)
        attached = Arena.attach(layout)
        seen = attached.array("data", 4)
        opened = attached.semaphores.semaphore()
        attached.semaphores.lock()
        attached.semaphores.unlink()
        assert not any(path.exists() for path in names)
        assert list(seen.mv) == [3] * 4  # as they are: not filled again
        seen.mv[1] = 9
        assert data.mv[1] == 9
        made.release()
        assert opened.acquire(timeout=1)
        attached.close()
        assert all((SHM_DIR / s.name).exists() for s in arena.segments)  # not the attacher's
    assert not any((SHM_DIR / s.name).exists() for s in arena.segments)


def _named_then_killed() -> None:
    arena = Arena.named()
    arena.array("x", 1)
    arena.semaphores.semaphore()
    os.kill(os.getpid(), signal.SIGKILL)


def test_the_sweeper_removes_the_semaphore_names_of_a_killed_owner() -> None:
    child = FORK.Process(target=_named_then_killed)
    child.start()
    child.join()
    assert child.pid is not None
    left = sorted(path.name for path in POSIX_SHM_DIR.glob(f"sem.shmstress-{child.pid}-*"))
    assert len(left) == 1
    removed = sweep_segments_of([child.pid])
    assert set(left) < set(removed)
    assert not list(POSIX_SHM_DIR.glob(f"sem.shmstress-{child.pid}-*"))
