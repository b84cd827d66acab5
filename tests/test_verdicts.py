"""Verdicts as the exit-code reference says them, each with one line on stderr.

Every case here once gave another code or a traceback: a full ``--out`` that hid the
failure ``shmstress test`` found (2, not 1), a checkpoint said saved that was never
written, a tracker whose ``os._exit(0)`` at import made a run that never started exit 0,
a name too long and a bundle nested too deep that ended in tracebacks (1, not 2), a
campaign of a billion trials accepted, and a corrupt results line a resumed campaign
skipped without the warning the report gives.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shmstress.cli.main import main

pytestmark = pytest.mark.faults

ROOT = Path(__file__).resolve().parent.parent
COUNTER = ROOT / "examples" / "plain" / "counter.py"
SHMSTRESS = [sys.executable, "-m", "shmstress"]
TIMEOUT_S = 120.0


def _in_process(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``main(args)``: its exit code and its one line on stderr (asserted one)."""
    capsys.readouterr()
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    return code, _one_line(err)


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------------ shmstress test


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs filled up (root only): a disk that is full for real."""
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        (mount / "filler").write_bytes(b"\0" * shutil.disk_usage(mount).free)
        assert shutil.disk_usage(mount).free == 0
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_failure_found_by_test_is_exit_1_even_when_out_is_full(
    full_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, line = _in_process(["test", f"{COUNTER}:racy", "--seed", "1", "--quiet",
                              "--out", str(full_disk / "out")], capsys)
    assert code == 1  # the lost update: the exit-code table, exit 1 "whatever the disk says"
    assert line.startswith("shmstress: error: cannot write the repro bundle ")
    assert line.endswith(": No space left on device")
    assert not [p for p in (full_disk / "out").iterdir()]  # nothing cut under a name


SLOW_IMPORT = """
import os, pathlib, time
pathlib.Path(os.environ["IMPORTING"]).write_text("importing")
time.sleep(60)  # the host is still starting when the signal comes


def scenario():
    pass
"""


def test_a_search_stopped_before_its_first_save_does_not_say_it_is_saved(
    tmp_path: Path
) -> None:
    scenario, marker = tmp_path / "slow_import.py", tmp_path / "importing"
    scenario.write_text(SLOW_IMPORT)
    checkpoint = tmp_path / "search.ckpt"
    command = subprocess.Popen(
        [*SHMSTRESS, "test", f"{scenario}:scenario", "--quiet", "--executions", "3",
         "--checkpoint", str(checkpoint), "--out", str(tmp_path / "out")],
        env={**os.environ, "IMPORTING": str(marker)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not marker.exists():
            assert command.poll() is None and time.monotonic() < deadline, command.stderr
            time.sleep(0.05)
        command.send_signal(signal.SIGINT)
        _, err = command.communicate(timeout=TIMEOUT_S)
    finally:
        if command.poll() is None:
            command.kill()
            command.communicate()
    assert command.returncode == 130
    assert _one_line(err) == (f"shmstress: interrupted; nothing was saved in {checkpoint} "
                              "(stopped before the search's first save): the same command "
                              "starts it again")
    assert not checkpoint.exists()


# ---------------------------------------------------------------- a tracker that exits


EXITS_AT_IMPORT = """
import os

os._exit(0)


class Tracker:
    pass
"""


@pytest.mark.parametrize("command", [["run", "--duration", "0.3"],
                                     ["campaign", "--trials", "1"]])
def test_a_tracker_whose_import_ends_the_process_is_a_configuration_error(
    command: list[str], tmp_path: Path
) -> None:
    """Exit 2, as for ``sys.exit`` at import: the tracker is broken and nothing started
    (4 is for a run that broke once it had started)."""
    tracker = tmp_path / "exits.py"
    tracker.write_text(EXITS_AT_IMPORT)
    done = subprocess.run(  # its own process: the exit it tries would end pytest's
        [*SHMSTRESS, *command, "--tracker", f"{tracker}:Tracker", "--quiet",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 2
    assert _one_line(done.stderr) == (f"shmstress: error: importing {tracker} failed: it "
                                      "called os._exit(0)")


# ------------------------------------------------------------------------ bad input


@pytest.mark.parametrize("args", [
    ["run", "--variant", "fixed", "--json", "{long}"],
    ["run", "--variant", "fixed", "--log", "{long}"],
    ["test", f"{COUNTER}:racy", "--checkpoint", "{long}"],
    ["bench", "--json", "{long}"],
    ["show", "{bundle}", "--svg", "{long}"],
], ids=["run-json", "run-log", "test-checkpoint", "bench-json", "show-svg"])
def test_a_name_too_long_is_one_line_and_exit_2(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = tmp_path / ("a" * 300)
    bundle = tmp_path / "bundle.json"
    bundle.write_text("{}")
    code, line = _in_process([a.format(long=long, bundle=bundle) for a in args], capsys)
    assert code == 2
    assert line.startswith("shmstress: error: cannot write the ")
    assert line.endswith(": File name too long")


@pytest.fixture
def deep_bundle(tmp_path: Path) -> Path:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    return path


@pytest.mark.parametrize("command", [["replay"], ["show"], ["log"],
                                     ["shrink", "-o", "{small}"]])
def test_a_bundle_nested_too_deep_is_one_line_and_exit_2(
    command: list[str], deep_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [command[0], str(deep_bundle),
            *(a.format(small=tmp_path / "small.json") for a in command[1:])]
    code, line = _in_process(args, capsys)
    assert code == 2
    assert line.startswith(f"shmstress: error: {deep_bundle} is not a ")


LIMITED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
from shmstress.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
"""``shmstress`` with 4 GiB of address space: a grid expanded in full fails, not the host."""


@pytest.mark.parametrize(("option", "fragment"), [
    (["--trials", "1000000000"], "a grid holds at most 100,000"),
    (["--duration", "1e9"], "--duration must be at most 86,400 seconds"),
    (["--executions", "100000000000"], "--executions must be at most 10,000,000"),
])
def test_a_campaign_too_big_to_run_is_refused_at_once(
    option: list[str], fragment: str, tmp_path: Path
) -> None:
    """In a process of its own, in a session of its own and with 4 GiB of address space:
    accepted, the grid of a billion trials filled the memory while it was expanded, and a
    trial of 1e9 s never ended."""
    out = tmp_path / "campaign"
    command = subprocess.Popen(
        [sys.executable, "-c", LIMITED, "campaign", "--out", str(out), "--quiet", *option],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = command.communicate(timeout=TIMEOUT_S)
    finally:
        if command.poll() is None:  # accepted after all: torn down as a cancelled job is
            os.killpg(command.pid, signal.SIGTERM)
            try:
                command.communicate(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(command.pid, signal.SIGKILL)
                command.communicate()
    assert command.returncode == 2
    line = _one_line(err)
    assert fragment in line, line
    assert not out.exists()  # nothing started, nothing written


def test_a_resumed_campaign_warns_of_a_corrupt_line_as_the_report_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A JSON object that is no trial record (a flipped key): the resume used to take it
    silently; now it is the report's warning, word for word, and its trial runs again."""
    out = tmp_path / "campaign"
    grid = ["--variant", "fixed", "--workers", "binder=1", "--strategy", "pct",
            "--executions", "5", "--trials", "2", "--seed", "1", "--quiet"]
    assert main(["campaign", "--out", str(out), *grid]) == 0
    results = out / "results.jsonl"
    first, second = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(first + second.replace(b'"config_key"', b'"config_kex"'))
    code, warning = _in_process(["campaign", "--out", str(out), "--resume"], capsys)
    assert code == 0
    assert warning.startswith(f"shmstress: warning: {results}:2: skipped a corrupt line (")
    assert "config_key" in warning
    report = main(["report", str(results), "-o", str(tmp_path / "report")])
    said = capsys.readouterr().err.splitlines()
    assert report == 0 and warning in said
    assert len(results.read_bytes().splitlines()) == 3  # its trial ran again
