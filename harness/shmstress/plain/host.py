"""The host: one process per session that imports the scenario and forks each execution.

Importing once and forking a fresh ``main`` per execution gives every
execution the same starting state for free (module globals, objects made at
import), and objects made at import keep their identity in every execution.
Their shared bytes are the one thing a fork does not reset: the host restores
them from its manifest before each fork. The host is the subreaper of the
execution's processes, so when it reports an execution done, none is left.

For a long search (``session.FRESH_HOST_EXECUTIONS``), and for a checkpointed one
(``runner.lean_host``), the host is a fresh
interpreter (``core.fresh``), not a fork of the coordinator: each of its forks
copies the page tables of what it maps, and the coordinator maps numpy and every
module of the command line. It imports this module, the
instrumented primitives and the scenario, and no numpy. ``boot`` receives over
its socket what the coordinator built (``HostPlan``): it maps the same board by
name, opens the same semaphores, and takes the coordinator's ``sys.path`` and
``sys.argv``, so the scenario imports as it would have there.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import gc
import importlib
import linecache
import os
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import util
from multiprocessing.connection import Connection

from shmstress.core.errors import ScenarioError
from shmstress.core.processes import become_worker
from shmstress.core.shm import Arena, ArenaLayout, CreatedSegments
from shmstress.plain.board import G_HOST_EXIT, G_HOST_SEGMENTS, Board
from shmstress.plain.patch import install
from shmstress.plain.runtime import FreeNoise, PlainRuntime
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.selfcheck import SelfCheck
from shmstress.plain.sources import loaded_sources
from shmstress.plain.spec import MAILBOX_BYTES
from shmstress.plain.sync.process import run_main
from shmstress.record.recorder import Recorder

_PR_SET_CHILD_SUBREAPER = 36
_SHM_UNLINK: Callable[[str], None] = importlib.import_module("_posixshmem").shm_unlink
_WARM = ("multiprocessing.heap", "multiprocessing.connection", "multiprocessing.queues",
         "tempfile", "traceback", "linecache", "threading")


BOOT = "from shmstress.plain.host import boot; boot()"
"""What the fresh interpreter runs (``python -c``; its argument: its socket's descriptor)."""
_EXIT_FUNCTION: Callable[[], None] = getattr(util, "_exit_function")  # noqa: B009 - not
_FLUSH: Callable[[], None] = getattr(util, "_flush_std_streams")  # noqa: B009 - in the stubs


@dataclass(frozen=True)
class BoardSize:
    """The bounds the board and the string table are built with, in coordinator and host."""

    max_slots: int
    max_objects: int
    max_steps: int
    room: int  # steps the step log keeps past max_steps
    max_strings: int = 16384
    mailbox_bytes: int = MAILBOX_BYTES

    def build(self, arena: Arena) -> tuple[Board, Recorder]:
        """The board and the recorder, always in this order: an attached arena hands out
        arrays by name and semaphores in the order they were made."""
        board = Board.build(arena, self.max_slots, self.max_objects, self.max_steps,
                            room=self.room, mailbox_bytes=self.mailbox_bytes)
        return board, Recorder(arena, 1, 16, 1, max_strings=self.max_strings)


@dataclass(frozen=True)
class HostPlan:
    """What the coordinator tells a fresh host: where the board is, and what to import."""

    layout: ArenaLayout
    size: BoardSize
    created: CreatedSegments
    free: FreeNoise | None
    scenario: ScenarioRef
    trace: tuple[str, ...]
    coordinator: int
    path: tuple[str, ...]  # the coordinator's sys.path and sys.argv
    argv: tuple[str, ...]
    unset: tuple[str, ...] = ()  # variables set for the interpreter's start alone
    self_check: bool = True


def boot() -> None:
    """The fresh host: map the coordinator's board, then ``host_main``; exits, never
    returns (as a multiprocessing child does: its exit handlers, then ``os._exit``)."""
    code = 1  # Ctrl-C is the coordinator's: ignored from the start (``core.fresh``)
    channel = Connection(int(sys.argv[1]))
    try:
        plan: HostPlan = channel.recv()
        sys.path[:] = plan.path
        sys.argv[:] = plan.argv
        for name in plan.unset:  # the scenario sees the coordinator's environment
            os.environ.pop(name, None)
        arena = Arena.attach(plan.layout)
        board, recorder = plan.size.build(arena)
        arena.semaphores.unlink()  # every one is open here and in the coordinator
        runtime = PlainRuntime(board, recorder, plan.created)
        runtime.free = plan.free
        if plan.self_check:
            runtime.check = SelfCheck(board, recorder)
    except EOFError:  # the coordinator went away first
        os._exit(code)
    except BaseException as exc:
        channel.send(("error", f"the scenario's host could not start: {type(exc).__name__}: "
                      f"{exc}\n{traceback.format_exc()}"))
        os._exit(code)
    try:
        host_main(runtime, plan.scenario, plan.trace, channel, plan.coordinator, sources=True)
        code = 0
    finally:
        _EXIT_FUNCTION()
        _FLUSH()
        os._exit(code)


def host_main(
    runtime: PlainRuntime, scenario: ScenarioRef, trace: tuple[str, ...], ready: Connection,
    coordinator: int, sources: bool = False,
) -> None:
    """Import the scenario, say "ready", then fork one ``main`` per execution until told to
    exit. ``sources``: the ready message carries the code under test's files
    (``plain.sources``); only a fresh host's are the program's alone (a forked one holds the
    coordinator's modules too), and only a checkpoint, whose host is a fresh one, keeps them:
    a forked host skips the tens of milliseconds of resolving every loaded module's path."""
    become_worker(coordinator)
    # The execution's processes inherit this over their forks (they set up only their
    # parent's death and the signals): a hung one's stack goes to stderr, as the session
    # says, not into a memfd nobody reads.
    faulthandler.register(signal.SIGUSR1, file=2, all_threads=True)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1)
    try:
        if runtime.check is not None:  # before any of the scenario's: the harness's own
            runtime.check.remember_own_mappings()
        install(runtime)
        for module in _WARM:  # imported once here, not again in every execution
            importlib.import_module(module)
        if trace or runtime.free is not None:  # free mode's step lock needs the call hook
            from shmstress.plain.trace import Tracer, trace_roots

            runtime.tracer = Tracer(runtime, trace_roots(trace)).install
        function = scenario.load()
        _read_source(function)
        runtime.manifest.snapshot()
        if runtime.check is not None:  # what the import left is where every execution starts
            runtime.check.refresh()
    except ScenarioError as exc:
        ready.send(("error", str(exc)))
        return
    except BaseException as exc:  # whatever it is, the coordinator says it
        ready.send(("error", f"loading {scenario.describe()} failed: {type(exc).__name__}: "
                    f"{exc}\n{traceback.format_exc()}"))
        return
    compiled = getattr(function, "__code__", None)  # its file, even one shmstress ships
    ready.send(("ready", loaded_sources(compiled.co_filename if compiled else None)
                if sources else {}))
    gc.freeze()  # a fork's child then copies only the pages it writes, not every object GC visits
    board = runtime.board
    main, go = _prefork(runtime, function)
    while True:
        board.host_go.acquire()
        if board.globals.mv[G_HOST_EXIT]:
            os.close(go)  # the waiting main reads the end of the pipe and leaves
            os.waitpid(main, 0)
            _unlink(runtime, runtime.segments_left(0))
            return
        runtime.manifest.restore()
        # Free mode: a process killed holding the step lock (a child dies with its parent,
        # PR_SET_PDEATHSIG, when an unwinding main exits first) leaves it taken, and every
        # later execution would wait for it; those of the last one are all reaped by now.
        board.step_lock.acquire(False)
        board.step_lock.release()
        os.write(go, b"!")
        os.close(go)
        with contextlib.suppress(ChildProcessError):
            while True:
                os.waitpid(-main, 0)  # main, and every process of its group left behind
        _unlink(runtime, runtime.segments_left(int(board.globals.mv[G_HOST_SEGMENTS])))
        board.host_done.release()
        main, go = _prefork(runtime, function)  # forked while the coordinator wraps up


def _read_source(function: Callable[[], object]) -> None:
    """Read the scenario's source into ``linecache`` once, here: an object made in an
    execution is named after the variable its line assigns (``runtime.inferred_name``),
    and each execution's ``main`` would otherwise read the file again."""
    code = getattr(function, "__code__", None)
    if code is not None:
        linecache.getlines(code.co_filename)


def _unlink(runtime: PlainRuntime, names: list[str]) -> None:
    """Remove the named segments the scenario left (one may be gone already)."""
    for name in names:
        with contextlib.suppress(OSError):
            _SHM_UNLINK(name)
        if runtime.created is not None:
            runtime.created.unlinked(name)


def _prefork(runtime: PlainRuntime, function: Callable[[], object]) -> tuple[int, int]:
    """The next execution's ``main``, forked ahead and waiting for a byte on a pipe (the
    fork costs milliseconds, and the other CPU is idle while an execution runs)."""
    host = os.getpid()
    read_end, write_end = os.pipe()
    main = os.fork()
    if main == 0:
        os.close(write_end)
        run_main(runtime, host, function, read_end)
    # the group exists before the host waits for it (the child sets it too: whichever
    # runs first), or waitpid(-main) would find no such group and return at once
    os.setpgid(main, main)
    os.close(read_end)
    return main, write_end
