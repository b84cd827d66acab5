"""Segments on a shared host (issue 27, items 2, 3 and 7), each as an attack or a fault.

Another user plants a segment list naming a file of ours (the sweeper must not read it),
or plants a symlink where a list would go (nothing is written through it), or takes the
name of a run's first segment before the run does (the run goes on under another name);
another job fills the segment file system (the run is refused in one line, exit 2, no
SIGBUS, nothing left). Commands run with a segment directory of their own
(``$SHMSTRESS_SHM_DIR``), out of sight of every other run's sweeper.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.core import shm
from shmstress.core.config import SHM_DIR_ENV
from shmstress.core.shm import start_time

pytestmark = pytest.mark.faults

SHMSTRESS = [sys.executable, "-m", "shmstress"]
EXAMPLES = Path(__file__).parent.parent / "examples" / "plain"
NOBODY = 65534
"""Another user: the owner of what an attacker plants."""
SIGBUS_EXIT = 128 + 7
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="planting another uid's file needs root")


@pytest.fixture
def private_shm(tmp_path: Path) -> Iterator[Path]:
    """A segment directory of this test's own, on the same tmpfs as /dev/shm."""
    private = shm.POSIX_SHM_DIR / f"shmstress-test-{os.getpid()}-{tmp_path.name}"
    private.mkdir()
    try:
        yield private
    finally:
        shutil.rmtree(private, ignore_errors=True)


@pytest.fixture
def victims() -> Iterator[Callable[[int], Path]]:
    """Files in /dev/shm (where a list's names are unlinked) a sweep must not remove:
    ``victims(uid)`` makes one owned by ``uid``, 0600."""
    made: list[Path] = []

    def victim(uid: int) -> Path:
        path = shm.POSIX_SHM_DIR / f"victim-segment-{secrets.token_hex(8)}"
        path.write_bytes(b"precious")
        path.chmod(0o600)
        os.chown(path, uid, uid)
        made.append(path)
        return path

    yield victim
    for path in made:
        path.unlink(missing_ok=True)


def _dead_pid() -> int:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(dead.stdout)


def _shmstress(args: list[str], private: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, SHM_DIR_ENV: str(private), "SHMSTRESS_OUT": str(tmp_path / "out")}
    return subprocess.run([*SHMSTRESS, *args], env=env, capture_output=True, text=True,
                          timeout=300, check=False, cwd=tmp_path)


def _run_and_sweep(private: Path, tmp_path: Path) -> None:
    """A root run's start-up sweep, then ``shmstress sweep``: both must pass."""
    ran = _shmstress(["run", "--variant", "fixed", "--duration", "0.3", "--quiet"], private,
                     tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    swept = _shmstress(["sweep"], private, tmp_path)
    assert swept.returncode == 0, swept.stderr


# ------------------------------------------------------------------ planted lists


@needs_root
def test_a_list_another_user_planted_is_never_read(
    private_shm: Path, victims: Callable[[int], Path], tmp_path: Path,
) -> None:
    """A list of a dead pid, owned by another uid, naming a file of ours and one of theirs:
    a root run's start-up sweep and ``shmstress sweep`` leave all three alone."""
    ours, theirs = victims(os.geteuid()), victims(NOBODY)
    planted = private_shm / f"shmstress-{_dead_pid()}-1-created"
    planted.write_text(f"+{ours.name}\n+{theirs.name}\n")
    os.chown(planted, NOBODY, NOBODY)
    _run_and_sweep(private_shm, tmp_path)
    assert ours.exists() and theirs.exists()
    assert planted.exists(), "a file of another user's was unlinked"


@needs_root
def test_a_list_of_ours_unlinks_only_the_files_that_are_still_ours(
    private_shm: Path, victims: Callable[[int], Path], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dead run's own list names a segment it made (ours: swept) and a name another
    user holds now (theirs: kept)."""
    monkeypatch.setattr(shm, "SHM_DIR", private_shm)
    ours, theirs = victims(os.geteuid()), victims(NOBODY)
    listed = private_shm / f"shmstress-{_dead_pid()}-1-created"
    listed.write_text(f"+{ours.name}\n+{theirs.name}\n")
    assert shm.sweep_stale_segments() == [ours.name]
    assert not ours.exists() and theirs.exists()
    assert not listed.exists()


def test_a_list_that_is_a_symlink_is_not_followed(
    private_shm: Path, victims: Callable[[int], Path], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A symlink named like a dead run's list, to a file of ours that names a victim of
    ours: the sweep does not read through it (nor unlink the file it points to)."""
    monkeypatch.setattr(shm, "SHM_DIR", private_shm)
    victim = victims(os.geteuid())
    target = tmp_path / "looks-like-a-list"
    target.write_text(f"+{victim.name}\n")
    (private_shm / f"shmstress-{_dead_pid()}-1-created").symlink_to(target)
    shm.sweep_stale_segments()
    assert victim.exists()
    assert target.read_text() == f"+{victim.name}\n"


# ------------------------------------------------------------------ names taken first

FIXED = "f00d" * 4
"""The random part the first tries draw here, so that a test can take their names first."""


@pytest.fixture
def predictable_tries(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The first three 16-digit random parts drawn are ``FIXED``; the list says how many of
    them were drawn."""
    real = secrets.token_hex
    drawn: list[int] = []

    def token_hex(nbytes: int | None = None) -> str:
        if nbytes == 8 and len(drawn) < 3:
            drawn.append(1)
            return FIXED
        return real(nbytes)

    monkeypatch.setattr(secrets, "token_hex", token_hex)
    return drawn


def test_a_symlink_planted_at_a_lists_name_is_not_written_through(
    private_shm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    predictable_tries: list[int],
) -> None:
    """A watcher plants ``shmstress-<pid>-<start>-…-created -> a root-only file`` as a run
    starts: whichever name the run's list would take, nothing is appended to the file."""
    monkeypatch.setattr(shm, "SHM_DIR", private_shm)
    target = tmp_path / "root-only"
    target.write_text("secret\n")
    target.chmod(0o600)
    pid = os.getpid()
    started = start_time(pid)
    for name in (f"shmstress-{pid}-{started}-created",  # the name of earlier releases
                 f"shmstress-{pid}-{started}-{FIXED}-created"):
        (private_shm / name).symlink_to(target)
    created = shm.CreatedSegments.of(pid, started)
    created.created("psm_written_through")
    assert target.read_text() == "secret\n"
    assert not created.path.is_symlink()
    assert created.left() == ["psm_written_through"]
    # a symlink put in its place later (a directory that is not sticky) is not followed
    created.path.unlink()
    created.path.symlink_to(target)
    created.created("psm_later")
    assert target.read_text() == "secret\n"
    assert created.left() == []
    created.path.unlink()


def test_a_run_whose_first_segment_name_is_taken_still_runs(
    private_shm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    predictable_tries: list[int],
) -> None:
    """Another user creates the name the run's first segment would take (earlier releases'
    name, and the one the first random parts give): the run takes another and passes."""
    monkeypatch.setattr(shm, "SHM_DIR", private_shm)
    pid = os.getpid()
    started = start_time(pid)
    squatted = [private_shm / f"shmstress-{pid}-{started}-0",
                private_shm / f"shmstress-{pid}-{started}-{FIXED}-0"]
    for path in squatted:
        path.write_bytes(b"")
        if os.geteuid() == 0:
            os.chown(path, NOBODY, NOBODY)
    try:
        code = main(["run", "--variant", "fixed", "--duration", "0.3", "--seed", "1",
                     "--quiet", "--out", str(tmp_path)])
        assert code == 0
        assert len(predictable_tries) == 3, "the squatted names were not tried"
        assert all(path.exists() for path in squatted)
        assert sorted(private_shm.iterdir()) == sorted(squatted)
    finally:
        for path in squatted:
            path.unlink(missing_ok=True)


def test_a_watcher_who_saw_one_name_cannot_take_the_next(
    private_shm: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Segment 0's name, or semaphore 0's, tells nothing of number 1's: taking what would
    be the next name (the same name, the next number) stops neither."""
    monkeypatch.setattr(shm, "SHM_DIR", private_shm)
    squatted: list[Path] = []
    arena = shm.Arena.named()
    try:
        arena.array("first", 1)
        arena.semaphores.lock()
        first_segment = arena.segments[0].name
        first_semaphore = arena.layout().semaphores[0]
        for path in (private_shm / (first_segment[: -len("-0")] + "-1"),
                     shm.POSIX_SHM_DIR / f"sem.{first_semaphore.lstrip('/')[: -len('-0')]}-1"):
            path.write_bytes(b"")
            squatted.append(path)
        arena.array("second", 1 << 18)  # a segment of its own: number 1
        arena.semaphores.lock()
        assert len(arena.segments) == 2
        assert [path.exists() for path in squatted] == [True, True]
    finally:
        arena.close()
        for path in squatted:
            path.unlink(missing_ok=True)


# ------------------------------------------------------------------ a full file system


@contextlib.contextmanager
def _tmpfs(where: Path, size_mib: int) -> Iterator[Path]:
    """A tmpfs of ``size_mib`` mounted at ``where`` (skipped where mounting is not allowed)."""
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=1777",
                              "tmpfs", str(where)], capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def _fill(where: Path, leave_mib: float) -> Path:
    """A file that leaves ``leave_mib`` of ``where``'s file system free."""
    fs = os.statvfs(where)
    filler = where / "filler"
    with filler.open("wb") as out:
        os.posix_fallocate(out.fileno(), 0,
                           fs.f_bavail * fs.f_frsize - int(leave_mib * (1 << 20)))
    return filler


def _refused_in_one_line(done: subprocess.CompletedProcess[str], where: Path) -> None:
    """Exit 2 (before the start) or 4 (the run broke), one line, no segment left."""
    assert done.returncode not in (SIGBUS_EXIT, -signal.SIGBUS), "killed by SIGBUS"
    assert done.returncode in (2, 4), done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert [path.name for path in where.iterdir() if path.name != "filler"] == []


@pytest.mark.parametrize(("size_mib", "free_mib"), [(12, 12), (24, 12)],
                         ids=["12-mib-tmpfs", "24-mib-tmpfs-half-full"])
def test_a_run_in_a_full_segment_directory_is_refused_in_one_line(
    tmp_path: Path, size_mib: int, free_mib: int,
) -> None:
    """A free run takes 19 MiB of segments: with 12 MiB of room it is refused up front (the
    file system is too small) or when its segments are made (another job filled it); never
    killed by SIGBUS at a write to a page the file system could not give."""
    with _tmpfs(tmp_path / "tmpfs", size_mib) as where:
        if free_mib < size_mib:
            _fill(where, free_mib)
        done = _shmstress(["run", "--variant", "fixed", "--duration", "5", "--quiet"],
                          where, tmp_path)
        _refused_in_one_line(done, where)


def test_a_campaign_whose_segment_directory_fills_stops_in_one_line(tmp_path: Path) -> None:
    """The grid passed its check, then a trial finds no room: the campaign stops as on a
    full disk, exit 4, with the trials left and how to resume."""
    with _tmpfs(tmp_path / "tmpfs", 24) as where:
        _fill(where, 12)
        done = _shmstress(["campaign", "--trials", "1", "--out", str(tmp_path / "campaign")],
                          where, tmp_path)
        _refused_in_one_line(done, where)
        assert done.returncode == 4, done.stderr
        assert "no room for a" in done.stderr and "--resume" in done.stderr


def test_a_plain_code_test_in_a_full_segment_directory_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    with _tmpfs(tmp_path / "tmpfs", 12) as where:
        _fill(where, 0)
        done = _shmstress(["test", f"{EXAMPLES / 'counter.py'}:racy", "--quiet"],
                          where, tmp_path)
        _refused_in_one_line(done, where)
