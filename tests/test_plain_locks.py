"""mmap, file locks and foreign locks under control (issue 28, items 2 and 3).

Small libraries in the shape of real ones (tests/scenarios/lib_*.py): a dict over an mmap'd
``/dev/shm`` file locked with ``flock``, a list in ``SharedMemory`` guarded by a
``posix_ipc`` named semaphore (the orphaned-segment bug and its fix), a lock class of the
user's own declared with ``shmstress.testing.declare_lock``, a compare-and-swap spin lock
(``atomics``). Each racy version is found within 100 executions under the default strategy
and its bundle replays exactly; each correct one runs clean; free mode finds the racy ones
at least as often as a plain loop; nothing is left taken or behind.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import posix_ipc
import pytest

from shmstress.controlled.strategies import RandomWalkSpec, exploring_strategy
from shmstress.plain.outcome import PlainEnd
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.session import PlainSession
from shmstress.plain.spec import PlainSpec
from shmstress.repro.plain_bundle import from_json, from_outcome, to_json
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict
from tests.plain_twins import assert_free_not_rarer

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
OURS = os.environ["SHMSTRESS_TESTS_PREFIX"]  # what the scenarios name, this worker's (conftest)


def spec(where: str, function: str, traced: bool = True, **options: object) -> PlainSpec:
    """The scenario, with its file traced (``--trace``) unless told otherwise."""
    path = SCENARIOS / where
    return PlainSpec(ScenarioRef.parse(f"{path}:{function}"),  # type: ignore[arg-type]
                     trace=(str(path),) if traced else (), **options)


def search(where: str, function: str, executions: int, seed: int = 0) -> PlainResult:
    """Under the default strategy (the portfolio), the library traced."""
    return explore(spec(where, function), Exploration(seed=seed, executions=executions))


def left_behind() -> list[str]:
    """Our files, segments and semaphores in /dev/shm, and our files' locks in the OS."""
    files = [name for name in os.listdir("/dev/shm") if OURS in name]
    inodes = {os.stat(f"/dev/shm/{name}").st_ino for name in files}
    with open("/proc/locks", encoding="ascii") as table:
        locks = [line for line in table if int(line.split()[-3].rsplit(":", 1)[1]) in inodes]
    return files + locks


@pytest.fixture(autouse=True)
def nothing_left() -> Iterator[None]:
    before = left_behind()
    yield
    assert left_behind() == before


RACY = {
    ("lib_mmap_dict.py", "racy"): "AssertionError: 2 increments, n is 1",
    ("lib_posix_list.py", "orphan"): "AssertionError: appended 1, 2, 11, 12; the list has [",
    ("lib_declared.py", "racy"): "AssertionError: 2 increments, counter is 1",
    ("lib_spinlock.py", "racy"): "AssertionError: 2 increments, counter is 1",
}


@pytest.mark.parametrize(("where", "function"), sorted(RACY))
def test_racy_libraries_are_found_within_100_executions_and_replay_exactly(
        where: str, function: str) -> None:
    result = search(where, function, 100)
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert failing.failure.message.startswith(RACY[where, function]), failing.failure.message
    bundle = from_json(json.loads(json.dumps(to_json(from_outcome(
        function, result.spec, result.strategy, 0, result.failing_index, failing)))))
    for _ in range(2):
        report = replay_plain(bundle)
        assert report.verdict is Verdict.REPRODUCED, report.detail
        assert report.outcome.steps == failing.steps


def test_the_interleavings_show_the_locks_and_the_mapping() -> None:
    """The flock's acquire and release, the traced reads and writes of the mapping between
    them, and two processes' read and write of ``n`` interleaved."""
    failing = search("lib_mmap_dict.py", "racy", 100).failing
    assert failing is not None
    labels = [step.label for step in failing.steps if step.worker == 1]
    acquire = labels.index(next(label for label in labels if label.startswith("acquire flock@")))
    release = labels.index(labels[acquire].replace("acquire", "release", 1), acquire)
    assert "read self._mm[]" in labels[acquire:release], labels
    assert labels[-1].startswith("close _mm")  # mmap.close is a point


CORRECT = [("lib_mmap_dict.py", "locked"), ("lib_posix_list.py", "reattach"),
           ("lib_declared.py", "locked"), ("lib_spinlock.py", "locked")]


@pytest.mark.parametrize(("where", "function"), CORRECT)
def test_correct_twins_run_100_executions_clean(where: str, function: str) -> None:
    executions = 50 if where == "lib_spinlock.py" else 100  # its spins make it the slowest
    result = search(where, function, executions, seed=1)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": executions}


@pytest.mark.parametrize(("where", "function"), [
    ("lib_mmap_dict.py", "racy"), ("lib_posix_list.py", "orphan"), ("lib_declared.py", "racy")])
def test_free_mode_finds_the_race_at_least_as_often_as_a_plain_loop(
        where: str, function: str) -> None:
    path = SCENARIOS / where
    assert_free_not_rarer(path, function, 40, trace=(str(path),))


# -- file locks -----------------------------------------------------------------------------------
@pytest.fixture
def lock_files() -> Iterator[None]:
    sys.path.insert(0, str(SCENARIOS))
    try:
        import file_locks  # a scenario module, on the path just now
        file_locks.prepare()
        yield
        file_locks.clean()
    finally:
        sys.path.remove(str(SCENARIOS))


@pytest.mark.usefixtures("lock_files")
@pytest.mark.parametrize("function", ["shared_readers", "writer_refused_while_read",
                                      "closing_releases", "exit_releases"])
def test_file_locks_behave_as_the_os_says(function: str) -> None:
    """Shared holders together, LOCK_NB refused, released by close and by exit: each would
    end in a deadlock, a no-progress or an assertion if the model got it wrong."""
    result = search("file_locks.py", function, 30)
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 30}


@pytest.mark.usefixtures("lock_files")
def test_a_file_lock_deadlock_names_the_locks_their_holders_and_where_they_took_them() -> None:
    result = search("file_locks.py", "opposite_order", 100)
    failure = result.failing and result.failing.failure
    assert failure is not None and failure.end is PlainEnd.DEADLOCK, result.ends
    assert failure.message.startswith("deadlock: _both #"), failure.message
    for line in failure.details.splitlines()[1:]:
        assert " waits for lockf@file_locks.py:" in line, line
        assert f" on /dev/shm/{OURS}file_lock" in line, line  # the file, by its path
        assert ", held by _both #" in line and "(taken at file_locks.py:91; _both #" in line


@pytest.mark.usefixtures("lock_files")
def test_a_file_lock_held_outside_the_run_is_named() -> None:
    import file_locks  # on the path (lock_files)
    with open(file_locks.OUTSIDE, "a") as outside:
        fcntl.flock(outside, fcntl.LOCK_EX)
        result = search("file_locks.py", "outside", 3)
    failure = result.failing and result.failing.failure
    assert failure is not None, result.ends
    command = " ".join(word.decode() for word in Path("/proc/self/cmdline").read_bytes()
                       .split(b"\0") if word)[:120]
    assert failure.message.endswith(
        f"the flock on {file_locks.OUTSIDE} is held outside the run's control by pid "
        f"{os.getpid()} ({command}); the real call would block"), failure.message


# -- named semaphores, declared locks, mappings -------------------------------------------------
@pytest.fixture
def left_at_zero() -> Iterator[None]:
    """A semaphore a program left at 0, outside the run."""
    semaphore = posix_ipc.Semaphore(f"/{OURS}left_at_zero", posix_ipc.O_CREX)
    yield
    assert semaphore.value == 0  # read, never taken or released by the run
    semaphore.unlink()
    semaphore.close()


@pytest.mark.usefixtures("left_at_zero")
@pytest.mark.parametrize(("where", "function"), [
    ("named_semaphores.py", "adopted_at_zero"), ("named_semaphores.py", "names_come_and_go"),
    ("lib_declared.py", "unchangeable_class"), ("lib_declared.py", "declared_object"),
    ("mmap_uses.py", "each_execution_starts_from_import"),
    ("mmap_uses.py", "resized_and_closed")])
def test_what_they_offer_works_as_it_does_for_real(where: str, function: str) -> None:
    try:
        result = search(where, function, 20)
    finally:
        if os.path.exists(f"/dev/shm/{OURS}mmap_import"):  # made at import
            os.unlink(f"/dev/shm/{OURS}mmap_import")
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 20}


def test_a_mappings_methods_are_points_with_their_values() -> None:
    """Untraced: ``read_byte`` and ``write_byte`` are points of their own, with the value and
    the offset; a private mapping's are not."""
    the_spec = spec("mmap_uses.py", "each_execution_starts_from_import", traced=False)
    walk = exploring_strategy(RandomWalkSpec(), 0, the_spec.max_processes,
                              the_spec.max_steps, "plain")
    try:
        with PlainSession(the_spec) as session:
            assert walk.new_execution()
            outcome = session.execute(walk, walk.next_u64())
    finally:
        os.unlink(f"/dev/shm/{OURS}mmap_import")  # made at import
    assert outcome.end is PlainEnd.FINISHED, outcome.failure
    seen = [(step.worker, step.what, step.value) for step in outcome.steps
            if "MAPPED" in step.label]
    assert seen == [(1, "read MAPPED[0]", 0), (1, "write MAPPED[0]", 1),
                    (0, "read MAPPED[0]", 1), (0, "write MAPPED[0]", 2),
                    (0, "read MAPPED[]", None)], seen
    assert not [step for step in outcome.steps if "PRIVATE" in step.label]


@pytest.mark.parametrize(("where", "function", "expected"), [
    ("lib_declared.py", "held_while_joining",
     "take_it #1 waits for guard, held by main (taken at lib_declared.py:112; main is at "
     "lib_declared.py:115), at 'acquire guard'"),
    ("named_semaphores.py", "waits_for_a_taker",
     "_take #1 waits for lock, which is at zero, taken last by main (taken at "
     "named_semaphores.py:36; main is at named_semaphores.py:39), at 'acquire lock'"),
])
def test_a_blocked_process_names_the_lock_its_holder_and_both_places(
        where: str, function: str, expected: str) -> None:
    result = search(where, function, 10)
    failure = result.failing and result.failing.failure
    assert failure is not None and failure.end is PlainEnd.DEADLOCK, result.ends
    assert expected in failure.details.splitlines(), failure.details
