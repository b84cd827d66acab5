"""Run independent benchmark trials in parallel: each trial in a process of its own.

A trial (one exploration of a program under a strategy and a seed) is deterministic and
shares nothing with the others, so N of them can run at once on N cores. Each runs in
a process of its own pinned to one CPU of its own (a plain-code session pins itself
to the CPU it finds itself on: two sessions that happened to start on one CPU would
share it while another stays idle). The process sends its progress lines and then its
result back over a pipe; the parent logs the lines as they come and keeps the results
by the trial's index, so the caller assembles them in the serial order, whatever order
they finished in.

The trial process is a fresh interpreter (``python -c``), not a fork of the command:
it imports only what the trial needs (about 21 MB of heap against the command's 29 with
every subcommand imported), and a plain-code session forks its host, and the host every
process of every execution, from it. A fork copies the page tables of what the parent
has mapped, so a leaner ancestor makes each of those forks cheaper (measured: about a
sixth less CPU per execution on a three-process program).

Teardown is the usual one. A trial process dies with the parent (``PR_SET_PDEATHSIG``);
on Ctrl-C or SIGTERM the parent stops starting trials and sends SIGTERM to the running
ones, whose sessions tear down their hosts and segments on the way out (their own
``interruptible``), then reaps them. A trial that raises stops the pool the same way,
and its exception is raised in the parent.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Generic, TypeVar

from shmstress.core.errors import ShmstressError
from shmstress.core.processes import become_worker
from shmstress.core.signals import InterruptFlag, shielded

T = TypeVar("T")
R = TypeVar("R")
Log = Callable[[str], None]
Work = Callable[[T, Log], R]
"""One trial: its task and a log for progress lines; returns a picklable result."""

_POLL_S = 0.2  # how often the parent looks at the interrupt flag while it waits
_DRAIN_S = 10.0  # for the trials told to stop to say their last lines
_REAP_S = 5.0  # for a trial's process to exit, before it is terminated (then killed)


class TrialError(ShmstressError):
    """A trial raised in its process: the text of its exception and traceback."""


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity), in order."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


@dataclass
class _Running(Generic[T]):
    index: int
    process: subprocess.Popen[bytes]
    conn: Connection
    cpu: int
    ended: bool = False  # its pipe reached its end: the process is exiting


def run_pool(tasks: Sequence[T], work: Work[T, R], jobs: int, log: Log,
             interrupt: InterruptFlag) -> dict[int, R]:
    """Run ``work`` on every task, ``jobs`` at a time; the results by task index. Stops
    starting tasks once ``interrupt`` fired (the results so far are returned: the caller
    tells what is missing); a task that raised, or whose process died without a result,
    raises ``TrialError`` once the others are torn down."""
    cpus = usable_cpus()
    pending = list(enumerate(tasks))
    pending.reverse()  # popped from the end: in order
    running: list[_Running[T]] = []
    results: dict[int, R] = {}
    failure: str | None = None
    try:
        while (pending or running) and failure is None and not interrupt.fired:
            while pending and len(running) < max(1, jobs):
                index, task = pending.pop()
                busy = [r.cpu for r in running]
                cpu = min(cpus, key=lambda c: (busy.count(c), cpus.index(c)))
                running.append(_start(index, task, work, cpu))
            ready = wait([r.conn for r in running], _POLL_S)
            for entry in [r for r in running if r.conn in ready]:
                failure = _receive(entry, results, log)
                if entry.ended:
                    running.remove(entry)
                    _finish(entry)
                    if entry.index not in results and failure is None and not interrupt.fired:
                        failure = (f"trial {entry.index} ended without a result (exit code "
                                   f"{entry.process.returncode})")
                if failure is not None:
                    break
    except KeyboardInterrupt:  # a signal while waiting (``interrupt`` says so): stop
        pass
    finally:
        with shielded():
            _stop(running, log)
    if failure is not None:
        raise TrialError(failure)
    return results


def _start(index: int, task: T, work: Work[T, R], cpu: int) -> _Running[T]:
    task_read, task_write = os.pipe()
    result_read, result_write = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", _BOOT, str(task_read), str(result_write), str(os.getpid()),
             str(cpu)], pass_fds=(task_read, result_write))
    finally:
        os.close(task_read)
        os.close(result_write)
    with Connection(task_write, readable=False) as tasks:
        tasks.send((task, work))
    return _Running(index, process, Connection(result_read, writable=False), cpu)


def _receive(entry: _Running[T], results: dict[int, R], log: Log) -> str | None:
    """Take what the trial sent so far: log its lines, keep its result; the text of its
    exception if it raised."""
    while not entry.ended and entry.conn.poll():
        try:
            kind, payload = entry.conn.recv()
        except EOFError:
            entry.ended = True
            break
        if kind == "log":
            log(payload)
        elif kind == "result":
            results[entry.index] = payload
        else:
            return str(payload)
    return None


def _finish(entry: _Running[T]) -> None:
    """Reap the trial's process: it is exiting; a straggler is terminated, then killed."""
    process = entry.process
    for stop in (None, process.terminate, process.kill):
        if stop is not None:
            with contextlib.suppress(ProcessLookupError):
                stop()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(_REAP_S)
            break
    entry.conn.close()


def _stop(running: list[_Running[T]], log: Log) -> None:
    """SIGTERM to every trial still running (each tears its session down), their last
    lines logged (how far a cut trial got), then reap."""
    for entry in running:
        if entry.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                entry.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + _DRAIN_S
    for entry in running:
        with contextlib.suppress(OSError, EOFError):
            while not entry.ended and entry.conn.poll(max(0.0, deadline - time.monotonic())):
                kind, payload = entry.conn.recv()
                if kind == "log":
                    with contextlib.suppress(KeyboardInterrupt):  # teardown goes on
                        log(payload)
        _finish(entry)
    running.clear()


_BOOT = "from shmstress.bench.pool import trial_process; trial_process()"


def trial_process() -> None:
    """A trial's process (``python -c``; its arguments: the pipe it reads its task from,
    the pipe it writes to, the parent's pid and its CPU): the work on that CPU, its lines
    and its result over the pipe."""
    task_fd, result_fd, parent, cpu = (int(arg) for arg in sys.argv[1:5])
    become_worker(parent)
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setaffinity(0, {cpu})
    with Connection(task_fd, writable=False) as tasks:
        task, work = tasks.recv()
    send = Connection(result_fd, readable=False)
    try:
        result = work(task, lambda line: send.send(("log", line)))
    except KeyboardInterrupt:  # SIGTERM from the parent: the session tore itself down
        os._exit(130)
    except BaseException as exc:
        send.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
    else:
        send.send(("result", result))
    send.close()
