"""Fault injection: every fault a nightly job meets, and the outcome it must have.

Signals (SIGINT and SIGTERM to run, replay, shrink, campaign and bench, and a signal whose
exception a fork swallows), hung and stopped workers, unwritable and full output
locations, a campaign killed between a trial's bundle and its results line, corrupt
history, nonsensical command lines, and stale segments whose pid was reused. Each test
asserts the exit code, one line on stderr where the command refuses or fails, no
traceback, no process or segment left behind and no finished work lost.

Commands under a signal or a kill run as subprocesses with a segment directory of their
own (``$SHMSTRESS_SHM_DIR``), so the sweep of another shmstress run on the same machine
can neither remove their segments first nor be mistaken for their leak.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import psutil
import pytest

from shmstress.campaign import runner
from shmstress.campaign.results_file import ResultsFile
from shmstress.cli.main import build_parser, main
from shmstress.cli.run import validate_run_args
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import PctSpec
from shmstress.core import shm
from shmstress.core.config import RunConfig
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import ExitReason
from shmstress.core.files import ArtifactError, append_whole
from shmstress.core.shm import live_segments, segment_name, start_time
from shmstress.core.signals import Interrupted, interruptible, shielded
from shmstress.free.runner import run
from shmstress.repro.bundle import from_free_run, load_bundle, write_bundle
from tests.helpers import segments_left_by_us

pytestmark = pytest.mark.faults

SHMSTRESS = [sys.executable, "-m", "shmstress"]
TRACKERS = Path(__file__).parent / "trackers"
FIXTURE_RESULTS = Path(__file__).parent / "fixtures" / "reports" / "results-v1.jsonl"
SIGNAL_DEADLINE_S = 5.0
"""A signalled command must be gone this soon (the goal is a second or two; CI is shared)."""
PROBLEMS = ("Traceback", "Exception ignored", "KeyboardInterrupt")


# ------------------------------------------------------------------------------ helpers


@dataclass
class Ended:
    code: int
    out: str
    err: str
    after_signal_s: float  # from the signal to the exit
    descendants: list[psutil.Process]  # every process the command had started by then


def _descendants(pid: int) -> list[psutil.Process]:
    with contextlib.suppress(psutil.NoSuchProcess):
        return psutil.Process(pid).children(recursive=True)
    return []


def _signalled(
    args: list[str], env: dict[str, str], ready: Callable[[subprocess.Popen[bytes], Path], bool],
    signum: int, tmp_path: Path, cwd: Path | None = None, timeout_s: float = 90,
) -> Ended:
    """Start ``args``, wait until ``ready``, send ``signum`` and wait for the exit."""
    out_path, err_path = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err, env=env, cwd=cwd)
        try:
            deadline = time.monotonic() + timeout_s
            while not ready(proc, err_path):
                assert proc.poll() is None, err_path.read_text()
                assert time.monotonic() < deadline, f"not ready in {timeout_s} s"
                time.sleep(0.02)
            descendants = _descendants(proc.pid)
            sent = time.monotonic()
            proc.send_signal(signum)
            proc.wait(timeout=60)
            after = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return Ended(proc.returncode, out_path.read_text(), err_path.read_text(), after, descendants)


def _workers_started(count: int, settle_s: float = 0.2) -> Callable[..., bool]:
    seen: list[float] = []

    def ready(proc: subprocess.Popen[bytes], _: Path) -> bool:
        if len(_descendants(proc.pid)) >= count and not seen:
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] >= settle_s

    return ready


def _stderr_says(text: str) -> Callable[..., bool]:
    return lambda _, err: text in err.read_text()


def _assert_torn_down(ended: Ended, private: Path) -> None:
    """Gone within the deadline, 130, no traceback, every worker reaped, no segment left."""
    assert ended.code == 130, (ended.out, ended.err)
    assert ended.after_signal_s < SIGNAL_DEADLINE_S, ended.after_signal_s
    assert not any(problem in ended.err for problem in PROBLEMS), ended.err
    _, alive = psutil.wait_procs(ended.descendants, timeout=5)
    assert not alive, f"left running: {alive}"
    assert not list(private.iterdir()), "segments left behind"


def _one_line_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``args`` in this process: exit 2, one line on stderr, nothing started."""
    before = live_segments()
    started = time.monotonic()
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    elapsed = time.monotonic() - started
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2, (captured.out, err)
    assert len(err.splitlines()) == 1, err
    assert not any(problem in err for problem in PROBLEMS)
    assert captured.out == "", "nothing ran, so nothing is reported"
    assert elapsed < 10, "refused before anything started"
    assert not segments_left_by_us(before)
    return err


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A failing free run's bundle (``quick``: it replays in a moment) and one whose replay
    takes seconds (``long``: every step of a --keep-going run, checking an invariant that
    never breaks in it)."""
    folder = tmp_path_factory.mktemp("bundles")
    result = run(RunConfig(tracker="dra", variant="gather-unchecked", seed=7, duration=60,
                           max_points=60_000, stop_on_first=False))
    bundle = from_free_run(result)
    assert bundle is not None and len(bundle.steps) >= 60_000
    return {
        "quick": write_bundle(bundle, folder / "quick.json"),
        "long": write_bundle(replace(bundle, checks=("revision-monotonic",)), folder / "long.json"),
    }


SIGNALS = pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM],
                                  ids=["SIGINT", "SIGTERM"])


# ------------------------------------------------------------------------------ signals


@SIGNALS
def test_a_signal_ends_run_with_130_and_tears_down(
    signum: int, private_shm: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, private = private_shm
    ended = _signalled([*SHMSTRESS, "run", "--variant", "fixed", "--duration", "60", "--quiet",
                        "--out", str(tmp_path / "out")], env, _workers_started(4), signum,
                       tmp_path)
    _assert_torn_down(ended, private)
    assert "exit reason: interrupted" in ended.out
    assert "crashed" not in ended.out + ended.err


@SIGNALS
def test_a_signal_ends_replay_with_130_and_tears_down(
    signum: int, private_shm: tuple[dict[str, str], Path], tmp_path: Path,
    bundles: dict[str, Path],
) -> None:
    env, private = private_shm
    ended = _signalled([*SHMSTRESS, "replay", str(bundles["long"])], env, _workers_started(4),
                       signum, tmp_path)
    _assert_torn_down(ended, private)
    assert ended.err.strip() == "shmstress: interrupted"


@SIGNALS
def test_a_signal_ends_shrink_in_its_search_with_130_and_writes_nothing(
    signum: int, private_shm: tuple[dict[str, str], Path], tmp_path: Path,
    bundles: dict[str, Path],
) -> None:
    env, private = private_shm
    target = tmp_path / "small.json"
    ended = _signalled([*SHMSTRESS, "shrink", str(bundles["quick"]), "-o", str(target),
                        "--max-executions", "1000000"], env, _workers_started(4, settle_s=1.5),
                       signum, tmp_path)
    _assert_torn_down(ended, private)
    *progress, last = ended.err.strip().splitlines()
    assert last == "shmstress: interrupted"
    assert all(line.startswith("shrink: ") for line in progress)  # one line per stage done
    assert not target.exists() and not list(tmp_path.glob(".small.json*"))


@SIGNALS
def test_a_signal_ends_campaign_with_130_keeping_finished_trials(
    signum: int, private_shm: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, private = private_shm
    out = tmp_path / "campaign"
    results = out / "results.jsonl"
    ended = _signalled(
        [*SHMSTRESS, "campaign", "--out", str(out), "--variant", "fixed", "--workers",
         "binder=1", "--strategy", "free,pct", "--noise", "0.1", "--trials", "20",
         "--duration", "0.5", "--executions", "50", "--seed", "1", "--quiet"],
        env, lambda *_: results.exists() and results.read_bytes().count(b"\n") >= 2,
        signum, tmp_path)
    _assert_torn_down(ended, private)
    assert f"shmstress campaign --out {out} --resume" in ended.err
    kept = results.read_bytes()
    assert kept.endswith(b"\n")
    records = [json.loads(line) for line in kept.splitlines()]
    assert 2 <= len(records) < 40 and all(r["outcome"] == "clean" for r in records)


@SIGNALS
def test_a_signal_ends_bench_printing_only_complete_sections(
    signum: int, private_shm: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, private = private_shm
    figures = tmp_path / "bench.json"
    ended = _signalled(
        [*SHMSTRESS, "bench", "--section", "free", "--section", "detection", "--free-seconds",
         "0.3", "--trials", "50", "--budget", "1", "--variant", "gather-unchecked",
         "--json", str(figures)],
        env, _stderr_says("detection: gather-unchecked"), signum, tmp_path)
    _assert_torn_down(ended, private)
    assert "free mode (fixed, recording on):" in ended.out
    assert "time to first violation" not in ended.out  # the cut section prints nothing
    assert "interrupted: section 'detection' was cut short" in ended.out
    data = json.loads(figures.read_text())
    assert data["completed"] == ["free"] and data["cut"] == "detection"
    assert data["detections"] == []


_SWALLOWED = textwrap.dedent("""
    import os, signal, sys
    from shmstress.cli.main import main

    forks = 0

    def after_fork_in_parent():
        # Raise the signal inside an at-fork callback, where Python discards the
        # KeyboardInterrupt its handler raises (as it did inside logging's own callback).
        global forks
        forks += 1
        if forks == int(sys.argv[1]):
            os.kill(os.getpid(), signal.SIGINT)

    os.register_at_fork(after_in_parent=after_fork_in_parent)
    sys.exit(main(sys.argv[2:]))
""")


@pytest.mark.parametrize(("fork", "args", "says"), [
    (2, ["campaign", "--variant", "fixed", "--workers", "binder=1", "--strategy", "free",
         "--trials", "20", "--duration", "0.5", "--seed", "1", "--quiet"],
     "campaign interrupted"),
    (2, ["run", "--mode", "controlled", "--variant", "fixed", "--executions", "1000000",
         "--quiet"], "exit reason: interrupted"),
], ids=["campaign", "controlled-run"])
def test_a_sigint_during_fork_is_not_lost(
    fork: int, args: list[str], says: str, private_shm: tuple[dict[str, str], Path],
    tmp_path: Path,
) -> None:
    env, private = private_shm
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _SWALLOWED, str(fork), *args,
                           "--out", str(tmp_path / "out")], env=env, capture_output=True,
                          text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert time.monotonic() - started < 30, "the interrupt was noticed at once, not at the end"
    assert says in done.stdout + done.stderr
    assert not any(problem in done.stderr for problem in PROBLEMS), done.stderr
    assert not list(private.iterdir())


def test_a_signal_that_lands_while_shielded_is_delivered_on_the_way_out() -> None:
    """The outermost context raises a signal no code saw (shielded, or swallowed)."""
    with pytest.raises(Interrupted), interruptible() as flag:
        with shielded():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the handler runs here, and must not raise
        assert flag.fired and flag.pending
    with interruptible() as flag:  # acknowledged: the caller acted on it itself
        with shielded():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        flag.acknowledge()


# ------------------------------------------------------------------------------ hung workers


def test_a_stopped_free_worker_is_reported_hung_with_its_own_stack(
    private_shm: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, private = private_shm
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*SHMSTRESS, "run", "--variant", "fixed", "--duration", "60", "--hang-timeout", "3",
         "--quiet", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while len(workers := _descendants(proc.pid)) < 4:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        time.sleep(0.3)
        stopped = workers[0]
        stopped.suspend()  # SIGSTOP: it can run no handler of its own
        since = time.monotonic()
        stdout, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - since
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 4, stderr
    assert took < 30, took  # the 3 s hang timeout ended it, not the 60 s duration (slack: load)
    assert "exit reason: timeout" in stdout
    hung = [line for line in stdout.splitlines() if " hung: " in line]
    assert any(f"(pid {stopped.pid}) hung: finished no step" in line
               and "(its process was stopped)" in line for line in hung), stdout
    stack = stdout.split(f"(pid {stopped.pid}) hung:", 1)[1]
    assert 'File "' in stack and "in worker_main" in stack  # its own Python stack
    assert not any(problem in stderr for problem in PROBLEMS), stderr
    (log,) = out.glob("*.log")  # what happened until then, from shared memory
    assert "Recorded run" in log.read_text().splitlines()[0]
    assert not psutil.wait_procs(workers, timeout=5)[1]
    assert not list(private.iterdir())


def test_a_stopped_controlled_worker_is_reported_with_its_stack(
    private_shm: tuple[dict[str, str], Path],
) -> None:
    env, private = private_shm
    proc = subprocess.Popen(
        [*SHMSTRESS, "run", "--mode", "controlled", "--variant", "fixed", "--executions",
         "1000000", "--stop-timeout", "2", "--quiet"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while len(workers := _descendants(proc.pid)) < 4:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        time.sleep(0.3)
        workers[1].suspend()
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 4, stderr
    assert "did not reach its next point within 2 s (its process was stopped); its stack:" in (
        stdout), stdout
    assert 'File "' in stdout.split("its stack:", 1)[1]
    assert not any(problem in stderr for problem in PROBLEMS), stderr
    assert not psutil.wait_procs(workers, timeout=5)[1]
    assert not list(private.iterdir())


def test_a_controlled_step_that_never_returns_reports_its_stack() -> None:
    config = RunConfig(tracker=f"{TRACKERS / 'lock_order.py'}:LockOrder", variant="ordered",
                       seed=0, stop_timeout=0.5, params={"rounds": 8, "hang-after": 6})
    result = run_controlled(config, ControlledOptions(PctSpec(), executions=2))
    assert result.run.exit_reason is ExitReason.TIMEOUT
    (crash,) = result.run.crashes
    assert "(a step that never returns?); its stack:" in crash
    assert 'File "' in crash and "lock_order.py" in crash


# ------------------------------------------------------------------------------ outputs


@pytest.fixture
def not_a_dir(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("x")
    return path


@pytest.mark.parametrize(("args", "fragment"), [
    (["run", "--variant", "gather-unchecked", "--out", "{file}/out"],
     "cannot write the --out directory {file}/out: {file} is not a directory"),
    (["run", "--out", "{file}"], "it exists and is not a directory"),
    (["run", "--json", "{dir}"], "cannot write the --json file {dir}: it is a directory"),
    (["run", "--log", "{file}/run.log"], "cannot write the --log file"),
    (["run", "--mode", "controlled", "--json", "{file}/r.json"], "cannot write the --json file"),
    (["campaign", "--out", "{file}/c"], "cannot write the campaign directory --out"),
    (["report", str(FIXTURE_RESULTS), "-o", "{file}"], "cannot write the report directory -o"),
    (["bench", "--json", "{dir}"], "cannot write the --json file"),
    (["replay", "{quick}", "--log", "{file}/x.log"], "cannot write the --log file"),
    (["shrink", "{quick}", "-o", "{file}/small.json"], "cannot write the shrunk bundle"),
])
def test_an_unwritable_output_is_refused_before_anything_starts(
    args: list[str], fragment: str, not_a_dir: Path, tmp_path: Path, bundles: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    values = {"file": str(not_a_dir), "dir": str(tmp_path), "quick": str(bundles["quick"])}
    err = _one_line_exit_2([arg.format(**values) for arg in args], capsys)
    assert fragment.format(**values) in err


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (root only): a disk that fills up for real."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


_PAGE = 4096  # tmpfs gives out whole pages


def _fill(mount: Path, leave: int) -> None:
    """Fill ``mount`` until ``leave`` bytes (whole pages) are free."""
    free = shutil.disk_usage(mount).free
    (mount / "filler").write_bytes(b"\0" * max(0, free - leave))
    assert shutil.disk_usage(mount).free == leave


def _whole_files(folder: Path) -> list[Path]:
    """Every file below ``folder``; none may be a temporary left over."""
    files = [p for p in folder.rglob("*") if p.is_file() and p.name != "filler"]
    assert not [p for p in files if p.name.startswith(".")], f"temporaries left: {files}"
    return files


@pytest.mark.parametrize(("mode", "pages", "bundle_fits"), [
    (["--duration", "15"], 0, False),
    (["--mode", "controlled", "--strategy", "pct"], 0, False),
    # a controlled run's artifacts have fixed sizes: its bundle takes one page, its log
    # seven, its JSON two (measured on PCT's schedule of this seed)
    (["--mode", "controlled", "--strategy", "pct"], 1, True),
], ids=["free-nothing-fits", "controlled-nothing-fits", "controlled-the-bundle-fits"])
def test_a_full_disk_keeps_the_violation_exit_code_and_cuts_no_file(
    mode: list[str], pages: int, bundle_fits: bool, tiny_tmpfs: Path,
    private_shm: tuple[dict[str, str], Path],
) -> None:
    env, private = private_shm
    _fill(tiny_tmpfs, pages * _PAGE)
    out = tiny_tmpfs / "out"
    done = subprocess.run(
        [*SHMSTRESS, "run", "--variant", "gather-unchecked", "--seed", "3", *mode, "--quiet",
         "--out", str(out), "--json", str(tiny_tmpfs / "r.json")],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 1, done.stderr  # the violation, whatever the disk says
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("shmstress: error: cannot write"), err
    assert err.count("No space left on device") == (2 if bundle_fits else 3), err
    assert "exit reason: violation" in done.stdout
    files = _whole_files(tiny_tmpfs)  # no temporary left, and nothing cut:
    assert [p.name for p in files] == ([p.name for p in out.glob("*.json")] if bundle_fits
                                       else [])
    for bundle in files:
        load_bundle(bundle)  # whole: it loads
    assert ("repro bundle: " in done.stdout) == bundle_fits
    assert not list(private.iterdir())


def test_a_full_disk_stops_a_campaign_with_one_line_and_whole_lines(
    tiny_tmpfs: Path, private_shm: tuple[dict[str, str], Path]
) -> None:
    env, private = private_shm
    _fill(tiny_tmpfs, _PAGE)  # campaign.json fits, a bundle does not
    out = tiny_tmpfs / "campaign"
    done = subprocess.run(
        [*SHMSTRESS, "campaign", "--out", str(out), "--variant", "gather-unchecked",
         "--workers", "binder=1", "--strategy", "free", "--noise", "0.1", "--trials", "20",
         "--duration", "15", "--seed", "2", "--quiet"],
        capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 4, done.stderr  # it could not finish its grid
    errors = [line for line in done.stderr.splitlines() if line.startswith("shmstress: error:")]
    assert len(errors) == 1 and "No space left on device" in errors[0], done.stderr
    assert "--resume" in errors[0]
    assert "violation, seed " in errors[0] and "could not be recorded" in errors[0]  # named
    assert not any(problem in done.stderr for problem in PROBLEMS)
    _whole_files(out)
    results = out / "results.jsonl"
    if results.exists():
        assert all(json.loads(line) for line in results.read_bytes().splitlines())
    assert not list(private.iterdir())


def test_a_full_disk_leaves_no_cut_report_file(
    tiny_tmpfs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(tiny_tmpfs, 7 * _PAGE)  # less than a chart takes
    report = tiny_tmpfs / "report"
    code = main(["report", str(FIXTURE_RESULTS), "-o", str(report)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "No space left on device" in err
    for path in _whole_files(report):
        data = path.read_bytes()
        if path.suffix == ".png":
            assert data.endswith(b"IEND\xaeB`\x82"), f"cut PNG {path}"
        elif path.suffix == ".html":
            assert data.rstrip().endswith(b"</html>"), f"cut page {path}"


def test_enospc_on_every_write_keeps_the_verdict(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a tmpfs to fill: every artifact's fsync fails as a full disk does."""

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    code = main(["run", "--variant", "gather-unchecked", "--seed", "3", "--duration", "15",
                 "--quiet", "--out", str(tmp_path / "out"), "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert code == 1
    assert len(err.splitlines()) == 1 and err.count("No space left on device") == 3, err
    assert _whole_files(tmp_path) == []


def test_a_results_line_cut_by_a_full_disk_is_rolled_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"trial": 0}\n')
    real_write = os.write
    calls = []

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(ArtifactError, match="No space left on device"):
        append_whole(path, b'{"trial": 1, "outcome": "violation"}\n', "the results file")
    monkeypatch.undo()
    assert path.read_bytes() == b'{"trial": 0}\n'
    assert issubclass(ArtifactError, ConfigError)  # where uncaught: one line, exit 2


# ------------------------------------------------------------------------------ campaigns


_KILLED_BETWEEN = textwrap.dedent("""
    import os, signal, sys
    from shmstress.campaign import results_file
    from shmstress.cli.main import main

    real = results_file.ResultsFile.append
    calls = 0

    def append(self, record):
        # kill -9 after the second trial's bundle is written, before its results line
        global calls
        calls += 1
        if calls == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        real(self, record)

    results_file.ResultsFile.append = append
    sys.exit(main(sys.argv[1:]))
""")


def test_a_bundle_orphaned_by_kill_9_is_adopted_on_resume_never_rerun(
    private_shm: tuple[dict[str, str], Path], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    env, private = private_shm
    out = tmp_path / "campaign"
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_BETWEEN, "campaign", "--out", str(out), "--variant",
         "gather-unchecked", "--workers", "binder=1", "--strategy", "free,random_walk",
         "--noise", "0.1", "--trials", "1", "--duration", "15", "--seed", "5", "--quiet"],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    results = out / "results.jsonl"
    (first,) = [json.loads(line) for line in results.read_bytes().splitlines()]
    bundles = sorted((out / "bundles").rglob("*.json"))
    assert len(bundles) == 2, "the second trial's bundle was written before the kill"
    (orphan,) = [b for b in bundles if b.relative_to(out).as_posix() != first["bundle"]]
    shutil.rmtree(private, ignore_errors=True)  # the killed coordinator's (workers died too)
    private.mkdir()

    def never(*_: object, **__: object) -> None:
        raise AssertionError("an orphaned trial was run again")

    monkeypatch.setattr(runner, "run_trial", never)
    cut = orphan.parent / f".{orphan.name}.abc123.tmp"  # as a kill during a write leaves it
    cut.write_text('{"format": "shmstress-bun')
    assert main(["campaign", "--out", str(out), "--resume", "--quiet"]) == 0
    assert not cut.exists()
    captured = capsys.readouterr()
    relative = orphan.relative_to(out).as_posix()
    assert f"shmstress: warning: adopted {relative} as the result of trial 0" in captured.err
    assert "2/2 trials" in captured.out
    records = [json.loads(line) for line in results.read_bytes().splitlines()]
    adopted = records[1]
    assert (adopted["outcome"], adopted["bundle"]) == ("violation", relative)
    assert adopted["violation"]["invariant"] == load_bundle(orphan).violation.invariant
    assert adopted["replay_command"] == f"shmstress replay {relative}"
    assert adopted["swimlane"] == relative.removesuffix(".json") + ".svg"  # drawn before
    assert "recorded on resume from its bundle" in adopted["artifact_problems"][0]
    assert {r["seed"] for r in records} == {load_bundle(b).seed for b in bundles}
    monkeypatch.chdir(out)
    assert main(["replay", relative]) == 1  # the adopted record's command reproduces it


def test_corrupt_history_never_blocks_resume_report_or_a_new_campaign(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "campaign"
    grid = ["--variant", "fixed", "--workers", "binder=1", "--strategy", "pct",
            "--executions", "10", "--trials", "2", "--quiet"]
    assert main(["campaign", "--out", str(out), *grid, "--seed", "1"]) == 0
    results = out / "results.jsonl"
    good = results.read_bytes().splitlines(keepends=True)
    assert len(good) == 2
    results.write_bytes(b"".join([
        good[0], b"\xff\xfe not utf-8 \x00\n", b"[1, 2]\n", b'{"campaign": "x", "outc\n',
        good[1], b'{"schema": 2, "campaign": "y", "outcome": "maybe"}\n',
    ]))
    capsys.readouterr()
    assert main(["campaign", "--out", str(out), "--resume"]) == 0
    captured = capsys.readouterr()
    assert "2/2 trials" in captured.out
    for line in (2, 3, 4, 6):  # the report's own warning, the record that fits no schema too
        assert f"shmstress: warning: {results}:{line}: skipped a corrupt line" in captured.err
    assert main(["report", str(results), "-o", str(tmp_path / "report")]) == 0
    captured = capsys.readouterr()
    assert "2 trials" in captured.out and "4 lines skipped" in captured.out
    for line in (2, 3, 4, 6):
        assert f"{results}:{line}: skipped a corrupt line" in captured.err
    page = (tmp_path / "report" / "index.html").read_text()
    assert "4 lines of the results skipped" in page
    assert main(["campaign", "--out", str(out), *grid]) == 0  # a new campaign appends
    # two trials and the new campaign's two: the JSON object that is no record is skipped
    assert len(ResultsFile(results).records()) == 2 + 2


# ------------------------------------------------------------------------------ input


@pytest.fixture
def bad_files(tmp_path: Path) -> dict[str, str]:
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00{\x81 not a bundle")
    trackers = {}
    for name, body in (("exits", "import sys\nsys.exit(3)\n"),
                       ("raises", "raise RuntimeError('broken on import')\n"),
                       ("exits_text", "raise SystemExit('bye')\n")):
        path = tmp_path / f"{name}.py"
        path.write_text(body)
        trackers[name] = f"{path}:Tracker"
    return {"binary": str(binary), **trackers}


@pytest.mark.parametrize(("args", "fragment"), [
    # flags that do not apply to the chosen mode
    (["run", "--strategy", "random_walk"], "--strategy applies only with --mode controlled"),
    (["run", "--depth", "2", "--executions", "5"], "--depth, --executions apply only with"),
    (["run", "--no-pin"], "--no-pin applies only with --mode controlled"),
    (["run", "--mode", "controlled", "--duration", "5"], "--duration applies only in free mode"),
    (["run", "--mode", "controlled", "--noise", "0.2", "--keep-going"],
     "--keep-going, --noise apply only in free mode"),
    (["run", "--mode", "controlled", "--hang-timeout", "3"], "--hang-timeout applies only in"),
    (["run", "--mode", "controlled", "--strategy", "random_walk", "--depth", "2"],
     "--depth applies only with --strategy pct"),
    (["run", "--mode", "controlled", "--bound", "2"], "--bound applies only with --strategy "
                                                     "exhaustive"),
    (["campaign", "--strategy", "pct", "--noise", "0.1", "--duration", "3"],
     "--noise, --duration would apply to no trial of the grid (strategies pct)"),
    (["campaign", "--strategy", "free", "--executions", "5"], "--executions would apply to no"),
    # the same thing twice
    (["run", "--workers", "binder=2", "--workers", "binder=3"],
     "--workers names binder twice (binder=2 and binder=3)"),
    (["run", "--param", "nodes=1", "--param", "nodes=2"], "--param names nodes twice"),
    (["run", "--check", "gather-complete", "--check", "gather-complete"], "--check names"),
    (["campaign", "--workers", "binder=1", "--workers", "binder=2"], "--workers names binder"),
    # empty list items
    (["run", "--noise-kind", "yield,,sleep"], "empty item in the list 'yield,,sleep'"),
    (["campaign", "--noise", "0.1,,0.2"], "empty item in the list '0.1,,0.2'"),
    (["campaign", "--variant", "fixed,,original"], "empty item in the list 'fixed,,original'"),
    (["campaign", "--workers", "binder=1,,2"], "empty item in the list '1,,2'"),
    (["campaign", "--strategy", "free,"], "empty item in the list 'free,'"),
    # non-finite or negative intervals
    (["campaign", "--heartbeat", "-1"], "--heartbeat must be a finite number > 0"),
    (["campaign", "--heartbeat", "nan"], "--heartbeat must be a finite number > 0"),
    (["campaign", "--noise", "nan"], "expected finite numbers"),
    (["run", "--hang-timeout", "-1"], "--hang-timeout must be a finite number > 0"),
    (["run", "--hang-timeout", "nan"], "--hang-timeout must be a finite number > 0"),
    (["run", "--stop-timeout", "inf"], "--stop-timeout must be a finite number > 0"),
    (["run", "--duration", "inf"], "--duration must be a finite number > 0"),
    (["bench", "--budget", "nan"], "--budget must be a finite number > 0"),
    (["bench", "--free-seconds", "inf"], "--free-seconds must be a finite number > 0"),
    (["bench", "--rate-seconds", "0.1"], "--rate-seconds must be > the 0.25 s warm-up"),
    # sizes and budgets
    (["run", "--max-sleep-us", "1e12"], "--max-sleep-us must be <= 1,000,000"),
    (["run", "--tape-size", "1000000000000"], "--tape-size 1,000,000,000,000 needs 7.3 TiB"),
    (["run", "--ring-size", "100000000000"], "--ring-size 100,000,000,000 needs"),
    (["shrink", "{binary}", "-o", "x.json", "--max-executions", "0"],
     "--max-executions must be >= 1, got 0"),
    (["bench", "--trials", "0"], "--trials must be >= 1, got 0"),
    (["bench", "--clean-points", "0"], "--clean-points must be >= 1"),
    (["bench", "--variant", "fixed"], "--variant fixed: the bench times the racy DRA variants"),
    (["check", "--steps", "0"], "--steps must be >= 1"),
    (["campaign", "--trials", "0"], "--trials must be >= 1, got 0"),
    # gateways
    (["campaign", "--tx", "nonsense"], "--tx 'nonsense': expected popen, socket=HOST:PORT"),
    (["campaign", "--tx", "socket=host"], "socket= needs HOST:PORT"),
    (["campaign", "--tx", "0*popen"], "the count before '*' must be >= 1"),
    # unreadable input
    (["replay", "{binary}"], "is not a repro bundle: not UTF-8 text (byte 0: b'\\xff')"),
    (["shrink", "{binary}", "-o", "{binary}.small.json"], "is not a repro bundle: not UTF-8"),
    (["log", "{binary}"], "is not a shmstress log or bundle: not UTF-8 text"),
    # trackers that exit or crash while loading
    (["run", "--tracker", "{exits}"], "failed: it called sys.exit(3)"),
    (["run", "--tracker", "{exits_text}"], "failed: it called sys.exit('bye')"),
    (["check", "--tracker", "{raises}"], "failed: RuntimeError: broken on import"),
])
def test_a_command_line_that_makes_no_sense_is_refused_in_one_line(
    args: list[str], fragment: str, bad_files: dict[str, str],
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    err = _one_line_exit_2([arg.format(**bad_files) for arg in args], capsys)
    assert fragment.format(**bad_files) in err


# ------------------------------------------------------------------------------ sweep


def test_sweep_tells_a_reused_pid_from_a_live_owner(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(shm, "SHM_DIR", tmp_path)  # out of every other run's sight
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid, me = int(dead.stdout), os.getpid()
    mine = start_time(me)
    assert mine is not None
    names = {
        "live owner": segment_name(me, 0),
        "pid reused by another process": segment_name(me, 1, started=mine + 1),
        "pid 1 reused": segment_name(1, 2, started=(start_time(1) or 0) + 7),
        "old name, live pid": f"shmstress-{me}-3",
        "old name, dead pid": f"shmstress-{dead_pid}-4",
        "dead owner": segment_name(dead_pid, 5, started=mine),
    }
    for name in names.values():
        (tmp_path / name).touch()
    removed = set(shm.sweep_stale_segments())
    assert removed == {names["pid reused by another process"], names["pid 1 reused"],
                       names["old name, dead pid"], names["dead owner"]}
    assert set(shm.live_segments()) == {names["live owner"], names["old name, live pid"]}


@pytest.mark.parametrize("mode", [["--duration", "60"], ["--mode", "controlled", "--executions",
                                                          "1000000"]], ids=["free", "controlled"])
def test_kill_9_leaves_no_worker_and_the_sweep_command_removes_its_segments(
    mode: list[str], private_shm: tuple[dict[str, str], Path],
) -> None:
    """In a segment directory of its own: another shmstress run's start-up sweep on the
    same machine cannot remove the killed coordinator's segments before the test looks."""
    env, private = private_shm
    proc = subprocess.Popen(
        [*SHMSTRESS, "run", *mode, "--variant", "fixed", "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 60
    while len(workers := _descendants(proc.pid)) < 4:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert not psutil.wait_procs(workers, timeout=5)[1], "workers outlived the coordinator"
    stale = sorted(p.name for p in private.iterdir())
    assert stale and all(s.startswith(f"shmstress-{proc.pid}-") for s in stale), stale
    swept = subprocess.run([*SHMSTRESS, "sweep"], env=env, capture_output=True, text=True,
                           timeout=60, check=False)
    assert swept.returncode == 0, swept.stderr
    assert f"removed {len(stale)} stale segment(s)" in swept.stdout
    assert not list(private.iterdir())


def test_the_rerun_commands_shmstress_prints_pass_its_own_checks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Refusing flags of the other mode must not refuse the commands shmstress prints."""
    commands = []
    for args in (["--variant", "gather-unchecked", "--duration", "15"],
                 ["--mode", "controlled", "--variant", "gather-unchecked"]):
        assert main(["run", *args, "--seed", "3", "--quiet", "--out", str(tmp_path)]) == 1
        out = capsys.readouterr().out
        commands.append(next(line.strip() for line in out.splitlines()
                             if line.strip().startswith("shmstress run --tracker")))
    assert "--mode controlled" in commands[1] and "--duration" not in commands[1]
    for command in commands:
        validate_run_args(build_parser().parse_args(shlex.split(command)[1:]))


def test_a_segment_the_code_under_test_left_is_swept_by_the_runs_list(
    private_shm: tuple[dict[str, str], Path],
) -> None:
    """kill -9 during ``shmstress test``: the scenario's own SharedMemory (a name the
    harness did not choose) is found by the run's list of created segments, not by name."""
    env, private = private_shm
    scenario = Path(__file__).parent / "scenarios" / "segments.py"
    proc = subprocess.Popen(
        [*SHMSTRESS, "test", f"{scenario}:long_with_a_segment", "--executions", "5",
         "--max-steps", "2000000", "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 60
        left: list[str] = []
        while not left:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
            lists = list(private.glob("shmstress-*-created"))
            if lists:
                left = shm.CreatedSegments(lists[0]).left()
        workers = _descendants(proc.pid)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert not psutil.wait_procs(workers, timeout=5)[1], "processes outlived the coordinator"
    assert all((shm.POSIX_SHM_DIR / name).exists() for name in left), left
    swept = subprocess.run([*SHMSTRESS, "sweep"], env=env, capture_output=True, text=True,
                           timeout=60, check=False)
    assert swept.returncode == 0, swept.stderr
    assert all(name in swept.stdout for name in left), swept.stdout
    assert not any((shm.POSIX_SHM_DIR / name).exists() for name in left)
    assert not list(private.iterdir())


def test_a_finished_test_leaves_no_list_and_no_segment(
    private_shm: tuple[dict[str, str], Path], tmp_path: Path,
) -> None:
    env, private = private_shm
    scenario = Path(__file__).parent.parent / "examples" / "plain" / "numpy_counts.py"
    # The scenario's SharedMemory names get a prefix of this test's own: other programs on
    # the machine (another suite, a user's run) make psm_* segments at any time too.
    prefix = f"psm{os.getpid() % 4096:03x}"
    (tmp_path / "sitecustomize.py").write_text(
        "import multiprocessing.shared_memory as m\n"
        f"m._SHM_NAME_PREFIX = '/{prefix}'\n")
    env = {**env, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(tmp_path), env.get("PYTHONPATH", "")]))}
    named = subprocess.run(
        [sys.executable, "-c", "from multiprocessing import shared_memory as m\n"
         "s = m.SharedMemory(create=True, size=8); print(s.name); s.close(); s.unlink()"],
        env=env, capture_output=True, text=True, timeout=60, check=True)
    assert named.stdout.startswith(prefix), named.stdout  # else the check below sees nothing
    before = {p.name for p in shm.POSIX_SHM_DIR.iterdir() if p.name.startswith(prefix)}
    done = subprocess.run(
        [*SHMSTRESS, "test", f"{scenario}:locked", "--executions", "3",
         "--quiet", "--out", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    after = {p.name for p in shm.POSIX_SHM_DIR.iterdir() if p.name.startswith(prefix)}
    assert not after - before
    assert not list(private.iterdir())
