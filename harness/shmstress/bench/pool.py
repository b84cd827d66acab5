"""Run independent benchmark trials in parallel, in a pool of processes, one a job.

A trial (one exploration of a program under a strategy and a seed) is deterministic and
shares nothing with the others, so N of them can run at once on N cores. Each process of
the pool is pinned to one CPU of its own (a plain-code session pins itself to the CPU it
finds itself on: two sessions that happened to start on one CPU would share it while
another stays idle) and runs trial after trial; it sends each one's progress lines and
result back over a pipe. The parent logs the lines as they come and keeps the results
by the trial's index, so the caller assembles them in the serial order, whatever order
they finished in.

The pool's processes are fresh interpreters (``core.fresh``), not forks of the command:
they import only what a trial needs (about 21 MB of heap against the command's 29 with
every subcommand imported). A plain-code session forks its host from there, and the
host every process of every execution; a fork copies the page tables of all the parent
has mapped, so a leaner ancestor makes each of those forks cheaper (measured: about a
sixth less CPU per execution on a three-process program). Each starts once, not once a
trial: an interpreter's start costs about as much as a small trial.

Teardown is the usual one. A pool process dies with the parent (``PR_SET_PDEATHSIG``);
on Ctrl-C or SIGTERM the parent stops starting trials and sends SIGTERM to the busy
processes, whose sessions tear down their hosts and segments on the way out (their own
``interruptible``), closes the idle ones' task pipes, logs the last lines and reaps
them all. A trial that raises stops the pool the same way, and its exception is raised
in the parent.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import TypeVar

import psutil

from shmstress.core.errors import TrialError
from shmstress.core.fresh import FreshProcess
from shmstress.core.processes import become_worker
from shmstress.core.shm import sweep_segments_of
from shmstress.core.signals import InterruptFlag, shielded

T = TypeVar("T")
R = TypeVar("R")
Log = Callable[[str], None]
Work = Callable[[T, Log], R]
"""One trial: its task and a log for progress lines; returns a picklable result."""

_POLL_S = 0.2  # how often the parent looks at the interrupt flag while it waits
_DRAIN_S = 10.0  # for the trials told to stop to say their last lines
_REAP_S = 5.0  # for a trial's process to exit, before it is terminated (then killed)


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity), in order."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


@dataclass
class _Worker:
    """A trial process: its pipes, its CPU, and the trial it runs (None: idle)."""

    process: FreshProcess
    tasks: Connection
    results: Connection
    cpu: int
    index: int | None = None
    ended: bool = False  # its result pipe reached its end: the process is exiting


def run_pool(tasks: Sequence[T], work: Work[T, R], jobs: int, log: Log,
             interrupt: InterruptFlag) -> dict[int, R]:
    """Run ``work`` on every task, ``jobs`` at a time; the results by task index. Stops
    starting tasks once ``interrupt`` fired (the results so far are returned: the caller
    tells what is missing); a task that raised, or whose process died without a result,
    raises ``TrialError`` once the others are torn down."""
    cpus = usable_cpus()
    pending = list(enumerate(tasks))
    pending.reverse()  # popped from the end: in order
    workers: list[_Worker] = []
    results: dict[int, R] = {}
    failure: str | None = None
    try:
        for number in range(min(max(1, jobs), len(pending))):
            workers.append(_start(cpus[number % len(cpus)]))
        while failure is None and not interrupt.fired:
            for worker in workers:
                if worker.index is None and pending and not worker.ended:
                    worker.index, task = pending.pop()
                    worker.tasks.send((task, work))
            busy = [w for w in workers if w.index is not None]
            if not busy:
                break
            ready = wait([w.results for w in busy], _POLL_S)
            for worker in [w for w in busy if w.results in ready]:
                failure = _receive(worker, results, log)
                if failure is None and worker.ended and not interrupt.fired:
                    failure = (f"the process of trial {worker.index} ended without its result "
                               f"(exit code {worker.process.exitcode})")
                if failure is not None:
                    break
    except KeyboardInterrupt:  # a signal while waiting (``interrupt`` says so): stop
        pass
    finally:
        with shielded():
            _stop(workers, log)
    if failure is not None:
        raise TrialError(failure)
    return results


def _start(cpu: int) -> _Worker:
    task_read, task_write = os.pipe()
    result_read, result_write = os.pipe()
    try:
        process = FreshProcess(_BOOT, (task_read, result_write), "shmstress-bench-trial",
                               args=(str(os.getpid()), str(cpu)))
        process.start()
    except BaseException:
        os.close(task_write)
        os.close(result_read)
        raise
    finally:
        os.close(task_read)
        os.close(result_write)
    return _Worker(process, Connection(task_write, readable=False),
                   Connection(result_read, writable=False), cpu)


def _receive(worker: _Worker, results: dict[int, R], log: Log) -> str | None:
    """Take what the trial sent so far: log its lines, keep its result (the worker is
    idle again); the text of its exception if it raised."""
    while worker.index is not None and not worker.ended and worker.results.poll():
        try:
            kind, payload = worker.results.recv()
        except EOFError:
            worker.ended = True
            break
        if kind == "log":
            log(payload)
        elif kind == "result":
            results[worker.index] = payload
            worker.index = None
        else:
            return str(payload)
    return None


def _stop(workers: list[_Worker], log: Log) -> None:
    """Idle workers are told to leave (their task pipe closes); busy ones get SIGTERM
    (each tears its session down) and their last lines are logged (how far a cut trial
    got); then every process is reaped."""
    family = _family(workers)
    for worker in workers:
        worker.tasks.close()
        if worker.index is not None and worker.process.exitcode is None:
            worker.process.terminate()  # SIGTERM
    deadline = time.monotonic() + _DRAIN_S
    for worker in workers:
        with contextlib.suppress(OSError, EOFError):
            while (worker.index is not None and not worker.ended
                   and worker.results.poll(max(0.0, deadline - time.monotonic()))):
                kind, payload = worker.results.recv()
                if kind == "log":
                    with contextlib.suppress(KeyboardInterrupt):  # teardown goes on
                        log(payload)
        _reap(worker)
    workers.clear()
    sweep_segments_of(family)  # a trial's teardown cut short (killed by ``_reap``) leaves them


def _family(workers: list[_Worker]) -> set[int]:
    """The pool's processes and their descendants (a trial's session host and the
    processes of its execution): whoever may own a segment a cut trial leaves."""
    family: set[int] = set()
    for worker in workers:
        pid = worker.process.pid
        if pid is None:  # never started
            continue
        family.add(pid)
        with contextlib.suppress(psutil.Error):
            family.update(p.pid for p in psutil.Process(pid).children(True))
    return family


def _reap(worker: _Worker) -> None:
    """Reap a worker's process: it is exiting; a straggler is terminated, then killed."""
    process = worker.process
    for stop in (None, process.terminate, process.kill):
        if stop is not None:
            stop()
        process.join(_REAP_S)
        if process.exitcode is not None:
            break
    with contextlib.suppress(ValueError):  # still running after SIGKILL: left to the OS
        process.close()
    worker.results.close()


_BOOT = "from shmstress.bench.pool import trial_process; trial_process()"


def trial_process() -> None:
    """A worker of the pool (``python -c``; its arguments: the pipe it reads tasks from,
    the pipe it writes to, the parent's pid and its CPU): trial after trial on that CPU,
    each one's lines and result over the pipe, until its task pipe closes."""
    task_fd, result_fd, parent, cpu = (int(arg) for arg in sys.argv[1:5])
    become_worker(parent)
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setaffinity(0, {cpu})
    signal.signal(signal.SIGTERM, _stop_trial)  # between trials too, not only in a session
    tasks = Connection(task_fd, writable=False)
    send = Connection(result_fd, readable=False)
    try:
        while True:
            try:
                task, work = tasks.recv()
            except EOFError:
                break
            try:
                result = work(task, lambda line: send.send(("log", line)))
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                send.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
                break
            send.send(("result", result))
    except KeyboardInterrupt:  # SIGTERM from the parent: the session tore itself down
        os._exit(130)
    send.close()


def _stop_trial(signum: int, frame: object) -> None:
    """SIGTERM in a pool process: unwind (a session on the way tears itself down)."""
    raise KeyboardInterrupt
