"""Process hygiene: workers die with the coordinator, ignore Ctrl-C, and are always reaped.

A hung worker's stack is its own: each worker's faulthandler writes its Python stack on
SIGUSR1 into an in-memory file of its own (a memfd, so a full disk cannot lose it), which
the coordinator reads through ``/proc/<pid>/fd``. A stopped process (SIGSTOP, a debugger
that let go) cannot run the handler, so ``dump_stacks`` sends SIGUSR1 and then SIGCONT:
the pending SIGUSR1 is delivered the moment the process runs again, before it takes
another step, so the stack is where it stopped. This needs no ptrace permission (py-spy
would, and containers often lack it) and no extra dependency.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import signal
import time
from collections.abc import Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded once: a forked process reuses it
STACK_FILE = "shmstress-stack"
"""Name of a worker's memfd that faulthandler writes its stack into on SIGUSR1."""
_STACK_WAIT_S = 1.0


def die_with(parent_pid: int) -> None:
    """Die with ``parent_pid`` (``PR_SET_PDEATHSIG``), which is not inherited over a fork:
    every forked process asks for it itself."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def worker_signals() -> None:
    """Leave Ctrl-C to the coordinator (it tears the workers down); SIGTERM ends a worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def become_worker(coordinator_pid: int) -> None:
    """First thing in a forked worker: die with the coordinator, leave Ctrl-C to it."""
    die_with(coordinator_pid)
    worker_signals()
    inherited = _stack_file(os.getpid())  # a worker's own child: that file is its parent's
    if inherited is not None:
        with contextlib.suppress(OSError, ValueError):
            os.close(int(inherited.name))
    stack_fd = None
    with contextlib.suppress(AttributeError, OSError):
        stack_fd = os.memfd_create(STACK_FILE, os.MFD_CLOEXEC)
    # no memfd: fd 2 itself (under pytest's capture sys.stderr has no file descriptor)
    faulthandler.register(signal.SIGUSR1, file=2 if stack_fd is None else stack_fd,
                          all_threads=True)


def _stack_file(pid: int) -> Path | None:
    """The memfd a worker's faulthandler writes into, as /proc shows it to its parent."""
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                if os.readlink(fd).startswith(f"/memfd:{STACK_FILE}"):
                    return fd
    return None


def _read(path: Path | None) -> bytes:
    if path is None:
        return b""
    try:
        return path.read_bytes()
    except OSError:
        return b""


def dump_stacks(processes: Sequence[BaseProcess]) -> dict[int, str]:
    """Each live worker's own Python stack (faulthandler on SIGUSR1, then SIGCONT in case it
    is stopped), by pid; a worker whose stack could not be read maps to a note saying so."""
    files: dict[int, tuple[Path | None, int]] = {}
    for process in processes:
        pid = process.pid
        if pid is None or not process.is_alive():
            continue
        path = _stack_file(pid)
        files[pid] = (path, len(_read(path)))
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGUSR1)
            os.kill(pid, signal.SIGCONT)
    stacks: dict[int, str] = {}
    deadline = time.monotonic() + _STACK_WAIT_S
    previous: dict[int, bytes] = {}
    while files and time.monotonic() < deadline:
        time.sleep(0.02)
        for pid, (path, start) in list(files.items()):
            data = _read(path)[start:]
            if data and data == previous.get(pid):  # written, and no longer growing
                stacks[pid] = data.decode("utf-8", "replace").rstrip()
                del files[pid]
            previous[pid] = data
    for pid, (path, _) in files.items():
        stacks[pid] = ("(no stack: the worker did not answer SIGUSR1 within "
                       f"{_STACK_WAIT_S:g} s)" if path is not None else
                       "(no stack: its faulthandler file is not readable)")
    return stacks


def process_state(pid: int) -> str:
    """``stopped``, ``sleeping``, ``running``...: what the kernel says the process is doing."""
    import psutil  # in the coordinator alone: a fresh host and its forks need not load it

    try:
        return str(psutil.Process(pid).status())
    except psutil.Error:
        return "gone"


def reap(processes: Sequence[BaseProcess], grace: float = 2.0) -> list[int]:
    """Join every worker; terminate, then kill, those that do not exit. Returns pids forced.

    psutil sends the signals; ``join`` does the waiting, so multiprocessing's
    own bookkeeping sees every exit status (reaping behind its back would
    leave it polling a pid that is gone).
    """
    import psutil

    # One a signal stopped while it was being started has no pid to join (``start`` raised
    # after the fork, before it kept the child): that child dies with us (PR_SET_PDEATHSIG).
    processes = [p for p in processes if p.pid is not None]
    forced = []
    _join_all(processes, grace)
    for sig_method in ("terminate", "kill"):
        stragglers = [p for p in processes if p.is_alive()]
        for process in stragglers:
            assert process.pid is not None
            forced.append(process.pid)
            with contextlib.suppress(psutil.NoSuchProcess):
                getattr(psutil.Process(process.pid), sig_method)()
        _join_all(stragglers, grace)
    return sorted(set(forced))


def _join_all(processes: Sequence[BaseProcess], grace: float) -> None:
    """Join each process within one ``grace`` for them all, not one per process: four
    workers that will not exit cost one grace period, not four."""
    deadline = time.monotonic() + grace
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()) if process.is_alive() else 0.0)


def live_children() -> list[psutil.Process]:
    """Child processes of this process still alive (zombies excluded)."""
    import psutil

    alive = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child)
    return alive
