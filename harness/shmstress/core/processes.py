"""Process hygiene: workers die with the coordinator, ignore Ctrl-C, and are always reaped."""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import signal
import sys
from collections.abc import Sequence
from multiprocessing.process import BaseProcess

import psutil

_PR_SET_PDEATHSIG = 1


def become_worker(coordinator_pid: int) -> None:
    """First thing in a forked worker: die with the coordinator, leave Ctrl-C to it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != coordinator_pid:  # the coordinator died before prctl took effect
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # fd 2 itself: under pytest's capture sys.stderr has no file descriptor
    faulthandler.register(signal.SIGUSR1, file=sys.__stderr__ or 2, all_threads=True)


def dump_stacks(processes: Sequence[BaseProcess]) -> None:
    """Ask hung workers for their Python stacks (faulthandler on SIGUSR1) before killing them."""
    for process in processes:
        if process.is_alive() and process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGUSR1)


def reap(processes: Sequence[BaseProcess], grace: float = 2.0) -> list[int]:
    """Join every worker; terminate, then kill, those that do not exit. Returns pids forced.

    psutil sends the signals; ``join`` does the waiting, so multiprocessing's
    own bookkeeping sees every exit status (reaping behind its back would
    leave it polling a pid that is gone).
    """
    forced = []
    for process in processes:
        process.join(grace if process.is_alive() else 0.0)
    for sig_method in ("terminate", "kill"):
        stragglers = [p for p in processes if p.is_alive()]
        for process in stragglers:
            assert process.pid is not None
            forced.append(process.pid)
            with contextlib.suppress(psutil.NoSuchProcess):
                getattr(psutil.Process(process.pid), sig_method)()
        for process in stragglers:
            process.join(grace)
    return sorted(set(forced))


def live_children() -> list[psutil.Process]:
    """Child processes of this process still alive (zombies excluded)."""
    alive = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child)
    return alive
