"""A signal at any moment of a command's life, start-up included, ends it with 130 and no
traceback; SIGINT ignored at start stays ignored; a fresh interpreter's start is quiet.

The trials signal ``run``, ``test`` and ``replay`` 0.05, 0.2 and 1 s after the interpreter
has started (the moment ``site`` is imported, as ``PYTHONPROFILEIMPORTTIME`` reports it):
before that moment the process runs only Python's own start-up, which no program can
handle a signal in, and which takes from a few milliseconds to a few tenths of a second
with the machine's load. From it on, the command's imports and parsing (half a second
idle, seconds under load) used to meet Python's defaults: SIGINT printed a traceback,
SIGTERM killed the process (143). Every other signal goes alternately to the
coordinator alone and to the whole process group (a terminal's Ctrl-C, a CI runner
that kills the job's group), whose fresh interpreters (a long search's host) are then
signalled while they start. The default suite runs two trials of each case and delay;
the ``nightly`` marker runs twenty.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from multiprocessing.connection import wait
from pathlib import Path

import psutil
import pytest

from shmstress.core.config import RunConfig
from shmstress.core.control import FORK
from shmstress.core.exit_reason import ExitReason
from shmstress.core.fresh import FreshProcess
from shmstress.core.processes import live_children, reap
from shmstress.core.signals import Interrupted, interruptible
from shmstress.free.runner import run
from shmstress.repro.bundle import from_free_run, write_bundle

pytestmark = pytest.mark.faults

ROOT = Path(__file__).resolve().parents[1]
_SCRIPT = Path(sys.executable).with_name("shmstress")
SHMSTRESS = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "shmstress"]
"""The console script where there is one (what a user runs), else ``python -m``."""
PROBLEMS = ("Traceback", "Exception ignored", "KeyboardInterrupt", "Fatal Python error")
DELAYS = (0.05, 0.2, 1.0)
SITE_IMPORTED = b"| site\n"
"""The line ``PYTHONPROFILEIMPORTTIME`` writes once the interpreter's own start-up is done."""


@dataclass
class Trial:
    signum: int
    to_group: bool  # the whole process group (Ctrl-C), or the coordinator alone

    def __str__(self) -> str:
        whom = "group" if self.to_group else "coordinator"
        return f"{signal.Signals(self.signum).name} to the {whom}"


def trials(count: int) -> list[Trial]:
    """SIGINT and SIGTERM in turn, each to the coordinator and to the group in turn."""
    return [Trial((signal.SIGINT, signal.SIGTERM)[i % 2], to_group=(i // 2) % 2 == 1)
            for i in range(count)]


@pytest.fixture(scope="module")
def long_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle whose replay takes seconds: every step of a --keep-going free run,
    checking an invariant that never breaks in it."""
    result = run(RunConfig(tracker="dra", variant="gather-unchecked", seed=7, duration=60,
                           max_points=60_000, stop_on_first=False))
    bundle = from_free_run(result)
    assert bundle is not None
    return write_bundle(replace(bundle, checks=("revision-monotonic",)),
                        tmp_path_factory.mktemp("bundle") / "long.json")


def _command(case: str, out: Path, bundle: Path) -> list[str]:
    """Each command still running 1 s after its start, even on an idle machine."""
    if case == "run":
        return [*SHMSTRESS, "run", "--variant", "fixed", "--duration", "60", "--quiet",
                "--out", str(out)]
    if case == "test":  # a long search: its host is a fresh interpreter
        return [*SHMSTRESS, "test", str(ROOT / "examples" / "plain" / "counter.py") + ":locked",
                "--executions", "100000", "--quiet", "--out", str(out)]
    return [*SHMSTRESS, "replay", str(bundle)]


def _family(pid: int) -> list[psutil.Process]:
    with contextlib.suppress(psutil.NoSuchProcess):
        return psutil.Process(pid).children(recursive=True)
    return []


def _signal_after_start(command: list[str], env: dict[str, str], private: Path, delay: float,
                        trial: Trial, folder: Path) -> str:
    """Start ``command``, signal it ``delay`` s after its interpreter started; what went
    wrong (empty: exit 130, no traceback, nothing left behind)."""
    err_path = folder / "stderr.txt"
    with err_path.open("wb") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err,
                                env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
                                start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while SITE_IMPORTED not in err_path.read_bytes():
                if proc.poll() is not None or time.monotonic() > deadline:
                    return f"the interpreter never started (exit {proc.poll()})"
                time.sleep(0.002)
            time.sleep(delay)
            family = _family(proc.pid)
            (os.killpg if trial.to_group else os.kill)(proc.pid, trial.signum)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    said = "\n".join(line for line in err_path.read_text(errors="replace").splitlines()
                     if not line.startswith("import time:"))
    problems = []
    if proc.returncode != 130:
        problems.append(f"exit {proc.returncode}")
    problems += [f"{problem!r} on stderr" for problem in PROBLEMS if problem in said]
    _, alive = psutil.wait_procs(family, timeout=10)
    problems += [f"left running: {alive}"] if alive else []
    left = list(private.iterdir())
    problems += [f"segments left: {left}"] if left else []
    if problems:
        return f"{trial} at {delay:g} s: {', '.join(problems)}\n{said[-2000:]}"
    return ""


def _run_trials(case: str, delay: float, count: int, env: dict[str, str], private: Path,
                tmp_path: Path, bundle: Path) -> None:
    failures = []
    for number, trial in enumerate(trials(count)):
        folder = tmp_path / str(number)
        folder.mkdir()
        failure = _signal_after_start(_command(case, folder / "out", bundle), env, private,
                                      delay, trial, folder)
        if failure:
            failures.append(failure)
    assert not failures, f"{len(failures)} of {count} trials failed:\n" + "\n".join(failures)


@pytest.mark.parametrize("delay", DELAYS)
@pytest.mark.parametrize("case", ["run", "test", "replay"])
def test_a_signal_during_start_up_ends_the_command_with_130_and_no_traceback(
    case: str, delay: float, private_shm: tuple[dict[str, str], Path], tmp_path: Path,
    long_bundle: Path,
) -> None:
    env, private = private_shm
    _run_trials(case, delay, 2, env, private, tmp_path, long_bundle)


@pytest.mark.nightly
@pytest.mark.parametrize("delay", DELAYS)
@pytest.mark.parametrize("case", ["run", "test", "replay"])
def test_twenty_of_twenty_signals_during_start_up_end_the_command_with_130(
    case: str, delay: float, private_shm: tuple[dict[str, str], Path], tmp_path: Path,
    long_bundle: Path,
) -> None:
    env, private = private_shm
    _run_trials(case, delay, 20, env, private, tmp_path, long_bundle)


# ------------------------------------------------------------------ SIGINT ignored at start


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_process_whose_start_a_signal_cut_short_is_reaped_as_none() -> None:
    """A signal in ``Process.start`` after the fork leaves a process with no pid (its Popen
    never kept): reaping it must not fail, or the session's close stops before it unlinks
    its segments (a fresh-clone run: SIGTERM at 1 s, 'can only join a started process',
    exit 1 and seven segments left)."""
    never_started = FORK.Process(target=print)
    assert reap([never_started]) == []


def test_sigint_ignored_at_start_stays_ignored_sigterm_still_interrupts() -> None:
    with _sigint_ignored():
        with interruptible() as flag:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.01)  # the handler runs between two bytecodes
            except KeyboardInterrupt:
                pytest.fail("SIGINT, ignored at start, was obeyed")
            assert not flag.fired
            with pytest.raises(Interrupted):
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_a_background_command_ignores_sigint_for_its_whole_run(
    private_shm: tuple[dict[str, str], Path], tmp_path: Path,
) -> None:
    """A script's ``cmd &`` starts the command with SIGINT ignored: it stays so after the
    policy is installed (it used to be obeyed once the imports were done)."""
    env, private = private_shm
    with _sigint_ignored():  # inherited over the exec, as a shell's ``&`` does it
        proc = subprocess.Popen(_command("run", tmp_path / "out", tmp_path),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 120
        while len(_family(proc.pid)) < 4:  # its workers run: the policy is long installed
            assert proc.poll() is None and time.monotonic() < deadline
            os.kill(proc.pid, signal.SIGINT)
            time.sleep(0.05)
        for _ in range(5):
            os.kill(proc.pid, signal.SIGINT)
            time.sleep(0.05)
        time.sleep(0.5)
        assert proc.poll() is None, "SIGINT was obeyed"
        family = _family(proc.pid)
        proc.terminate()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err.decode()
    assert b"exit reason: interrupted" in out
    assert not any(problem.encode() in err for problem in PROBLEMS), err.decode()
    _, alive = psutil.wait_procs(family, timeout=10)
    assert not alive
    assert not list(private.iterdir())


def test_the_entry_points_policy_outlives_the_command_shielded() -> None:
    """``until_exit``: after the block a signal neither raises nor kills (the interpreter
    is exiting with the command's own code)."""
    seen: list[int] = []
    previous = {signal.SIGINT: signal.getsignal(signal.SIGINT),
                signal.SIGTERM: signal.signal(signal.SIGTERM, lambda sig, _: seen.append(sig))}
    previous_hook = sys.unraisablehook
    try:
        with interruptible(until_exit=True) as flag:
            pass
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)
        assert flag.fired
        assert not seen, "the handler before the policy was put back"
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)
        sys.unraisablehook = previous_hook


# ----------------------------------------------------------------- a fresh interpreter's start


def test_ctrl_c_while_a_fresh_interpreter_starts_prints_nothing_and_stops_nothing(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Ctrl-C signals the whole group; a fresh host or pool process leaves it to its parent
    from its first instruction: SIGINT all through its start neither kills it (SIG_DFL)
    nor prints a KeyboardInterrupt traceback (Python's handler during its imports)."""
    read, write = os.pipe()
    code = ("import os, sys, json, email.parser, http.client\n"  # imports to be signalled in
            "os.write(int(sys.argv[1]), b'started')\n")
    process = FreshProcess(code, (write,), "shmstress-test-fresh")
    process.start()
    os.close(write)
    pid = process.pid
    assert pid is not None
    stop = threading.Event()

    def pester() -> None:  # from the spawn to the end of its imports
        while not stop.is_set():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)
            time.sleep(0.001)

    thread = threading.Thread(target=pester)
    thread.start()
    try:
        started = os.read(read, 16) if wait([read], 60) else b""
    finally:
        stop.set()
        thread.join()
        os.close(read)
        process.join(60)
    assert process.exitcode == 0, capfd.readouterr().err
    assert started == b"started"
    err = capfd.readouterr().err
    assert not any(problem in err for problem in PROBLEMS), err


# ------------------------------------------------------------------------- a quick ending


def test_an_interrupted_run_ends_without_decoding_what_it_recorded() -> None:
    """Decoding the workers' rings takes seconds under load; an interrupted run with no
    violation to report skips it (exit within a second or two)."""
    stop = threading.Event()

    def interrupt_once_the_workers_run() -> None:
        while not stop.is_set() and len(live_children()) < 4:
            time.sleep(0.01)
        if not stop.wait(0.5):
            os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=interrupt_once_the_workers_run)
    thread.start()
    try:
        result = run(RunConfig(tracker="dra", variant="fixed", seed=1, duration=60))
    finally:
        stop.set()
        thread.join()
    assert result.exit_reason is ExitReason.INTERRUPTED
    assert result.violation_count == 0
    assert result.recording is None
