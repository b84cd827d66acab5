"""A process that runs in a fresh interpreter, handled like any multiprocessing process.

A fork copies the page tables of everything its parent has mapped, and a process
that forks often (the plain-code host forks every process of every execution)
pays that at each fork, and the child again at each page it writes. A host
forked from the coordinator carries all the coordinator imported (numpy, the
command line's modules: about 29 MB of address space); one started as a new
interpreter carries only what it imports itself.

``FreshProcess`` is a multiprocessing process whose start runs ``python -c
CODE FD... ARG...`` (``posix_spawn``: no copy of this process's page tables
either), with the same interpreter flags, the same environment and standard
input on /dev/null as a multiprocessing child has, and the descriptors ``FD``
inherited to talk over. ``join``, ``is_alive``, ``exitcode``, ``terminate`` and
``close`` are multiprocessing's own, so ``processes.reap`` tears it down like
any worker. Unlike multiprocessing's spawn start method it does not import the
parent's ``__main__`` again and starts no resource tracker.

Ctrl-C is the parent's to handle, from the new interpreter's first instruction: it
signals the whole process group, and one that lands while the interpreter starts
and imports (a tenth of a second idle, seconds under load) would print a
KeyboardInterrupt traceback. So the interpreter starts with SIGINT blocked, and
the first thing ``CODE`` runs ignores it (which discards one that came) and
unblocks it. SIGTERM keeps its default: it ends the process without a word.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from multiprocessing import popen_fork, util
from multiprocessing.context import ForkProcess
from typing import Any

HASH_SEED = "PYTHONHASHSEED"
_LEAVE_CTRL_C = ("import _signal as s; s.signal(s.SIGINT, s.SIG_IGN); "
                 "s.pthread_sigmask(s.SIG_UNBLOCK, (s.SIGINT,)); del s\n")
"""What a fresh interpreter runs first (before any import: ``_signal`` is built in)."""


class _Spawned(popen_fork.Popen):
    """multiprocessing's fork ``Popen`` (its wait, poll and signals), started by
    ``posix_spawn`` of a new interpreter instead of ``fork``."""

    method = "fresh"

    def _launch(self, process_obj: Any) -> None:
        assert isinstance(process_obj, FreshProcess)
        sentinel, child_end = os.pipe()  # the child holds child_end: EOF once it is gone
        passed = (child_end, *process_obj.fds)
        argv = [sys.executable, *_interpreter_flags(), "-c", _LEAVE_CTRL_C + process_obj.code,
                *map(str, process_obj.fds), *process_obj.args]
        try:
            for fd in passed:
                os.set_inheritable(fd, True)
            self.pid = os.posix_spawn(
                sys.executable, argv, process_obj.env,
                file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)],
                setsigmask=(signal.SIGINT,),  # not what this process blocks while it spawns
            )
        except BaseException:
            os.close(sentinel)
            raise
        finally:
            for fd in process_obj.fds:
                os.set_inheritable(fd, False)
            os.close(child_end)
        self.sentinel = sentinel
        self.finalizer = util.Finalize(self, os.close, (sentinel,))


class FreshProcess(ForkProcess):
    """``python -c code fd... arg...`` in a new interpreter; the ``fds`` stay open in it."""

    def __init__(self, code: str, fds: Sequence[int], name: str,
                 env: Mapping[str, str] | None = None, args: Sequence[str] = ()) -> None:
        super().__init__(name=name)
        self.code = code
        self.fds = tuple(fds)
        self.args = tuple(args)
        self.env = dict(os.environ if env is None else env)

    @staticmethod
    def _Popen(process_obj: Any) -> popen_fork.Popen:  # noqa: N802 - multiprocessing's name
        return _Spawned(process_obj)


def _interpreter_flags() -> list[str]:
    """This interpreter's options (-X, -W, -O...), as multiprocessing passes them on."""
    flags: list[str] = getattr(subprocess, "_args_from_interpreter_flags")()  # noqa: B009
    return flags
