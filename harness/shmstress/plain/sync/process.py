"""``Process.start``, ``join``, ``is_alive``: the fork and the wait, under control.

The patched ``Popen`` forks as the real fork ``Popen`` does, but first takes a
point ("start"), gives the child a slot, and has the child park before its
first instruction, so the child runs only when a strategy says so. ``join``
parks until the child's slot has finished. A child that raises is the
execution's failure (its traceback is the failure's text, not printed);
``sys.exit`` is not a failure, as in plain Python.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Callable
from multiprocessing import popen_fork, util
from typing import Any, ClassVar

from shmstress.core.errors import PlainLimitError
from shmstress.core.processes import die_with, worker_signals
from shmstress.plain.board import P_EXITCODE, P_STATE, P_STRIDE, State, Wait
from shmstress.plain.runtime import Abort, PlainRuntime

PLUMBING = True
_MULTIPROCESSING = os.path.dirname(os.path.abspath(util.__file__))
_CLOSE_FDS: Callable[..., None] = getattr(util, "close_fds")  # noqa: B009 - not in the stubs
_EXIT_FUNCTION: Callable[[], None] = getattr(util, "_exit_function")  # noqa: B009 - ditto


def process_word(process_obj: Any) -> str:
    """What a process is called before its number: its target's name, else its class's."""
    target = getattr(process_obj, "_target", None)
    name = getattr(target, "__name__", "") if target is not None else ""
    if name and name != "<lambda>":
        return str(name)
    kind = type(process_obj).__name__
    return "process" if kind in ("Process", "ForkProcess") else kind.lower()


def guarded_run(runtime: PlainRuntime, run: Callable[[], None]) -> Callable[[], None]:
    """``run`` whose exception is the execution's failure; exit code 1, nothing printed."""

    def guarded() -> None:
        try:
            run()
        except (Abort, SystemExit):
            raise
        except BaseException as exc:
            runtime.fail(user_traceback(exc), limit=isinstance(exc, PlainLimitError))
            raise SystemExit(1) from None

    return guarded


def user_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` without the harness's frames above the user's code."""
    frames = traceback.extract_tb(exc.__traceback__)
    harness = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    user = [f for f in frames if not f.filename.startswith((harness, _MULTIPROCESSING))]
    head = ["Traceback (most recent call last):\n", *traceback.format_list(user or frames)]
    return "".join(head + traceback.format_exception_only(type(exc), exc))


class PlainPopen(popen_fork.Popen):
    _runtime: ClassVar[PlainRuntime]
    _slot: int = -1
    name = "process"

    def _launch(self, process_obj: Any) -> None:
        runtime = self._runtime
        if not runtime.scheduled:
            raise RuntimeError("shmstress: start processes in the scenario, not while its module "
                               "is imported")
        word = process_word(process_obj)
        step = runtime.point(f"start {word}")
        slot, self.name = runtime.new_slot(word)
        runtime.note(step, slot)
        self._slot = slot
        code = 1
        parent = os.getpid()
        parent_r, child_w = os.pipe()
        child_r, parent_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            runtime.slot = slot  # from here on, whatever happens is this slot's end
            try:
                os.close(parent_r)
                os.close(parent_w)
                die_with(parent)  # and the host's faulthandler file, inherited
                worker_signals()  # whatever the scenario's code set in its parent
                runtime.become(slot)
                process_obj.run = guarded_run(runtime, process_obj.run)
                code = process_obj._bootstrap(parent_sentinel=child_r)
            except Abort:
                code = 0
            finally:
                runtime.finish(code)
                os._exit(code)
        os.close(child_w)
        os.close(child_r)
        self.finalizer = util.Finalize(self, _CLOSE_FDS, (parent_r, parent_w))
        self.sentinel = parent_r

    def _finished(self) -> bool:
        board = self._runtime.board
        return board.slots.mv[self._slot * P_STRIDE + P_STATE] == State.FINISHED

    def _reap(self) -> int:
        """The exit code the child reported. It may still be exiting: if it has not, the
        host reaps it once this process has ended (it is the execution's subreaper)."""
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, os.WNOHANG)
        self.returncode = int(self._runtime.board.slots.mv[self._slot * P_STRIDE + P_EXITCODE])
        return self.returncode

    def poll(self, flag: int = os.WNOHANG) -> int | None:
        if self.returncode is None:
            if flag != os.WNOHANG:
                return self.wait()
            step = self._runtime.point(f"check on {self.name}")
            finished = self._finished()
            self._runtime.note(step, finished)
            if finished:
                return self._reap()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if self.returncode is None:
            runtime = self._runtime
            runtime.point(f"join {self.name}", Wait.JOIN, self._slot, timeout=timeout)
            if not self._finished():
                runtime.yielded = 1
                return None
            return self._reap()
        return self.returncode

    def _send_signal(self, sig: int) -> None:
        if self.returncode is None:
            runtime = self._runtime
            runtime.point(f"{'kill' if sig == signal.SIGKILL else 'terminate'} {self.name}")
            if not self._finished():  # it is parked: it never runs again, its locks stay held
                os.kill(self.pid, signal.SIGKILL)
                base = self._slot * P_STRIDE
                runtime.board.slots.mv[base + P_EXITCODE] = -sig
                runtime.board.slots.mv[base + P_STATE] = State.FINISHED
                runtime.wake()


def _discard(value: object) -> None:
    """A scenario may return something; nothing is done with it."""


def run_main(
    runtime: PlainRuntime, host: int, scenario: Callable[[], object], go: int
) -> None:
    """The body of an execution's ``main`` (slot 0), forked ahead by the host: it waits for
    a byte on ``go`` (end of file: no execution, leave), then runs the scenario. Never
    returns."""
    code = 0
    runtime.slot = 0
    try:
        die_with(host)
        worker_signals()
        os.setpgid(0, 0)  # the execution's processes: one group, killed as one after a hang
        if not os.read(go, 1):
            os._exit(0)
        os.close(go)
        runtime.become(0)
        try:
            guarded_run(runtime, lambda: _discard(scenario()))()
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        _EXIT_FUNCTION()  # join the processes still running, as Python's exit does
    except Abort:
        pass
    except BaseException:  # the harness's own failure in this process: say it, then go
        sys.stderr.write(f"shmstress: the execution's main failed:\n{traceback.format_exc()}")
    finally:
        runtime.finish(code)
        os._exit(code)
