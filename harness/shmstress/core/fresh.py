"""A process that runs in a fresh interpreter, handled like any multiprocessing process.

A fork copies the page tables of everything its parent has mapped, and a process
that forks often (the plain-code host forks every process of every execution)
pays that at each fork, and the child again at each page it writes. A host
forked from the coordinator carries all the coordinator imported (numpy, the
command line's modules: about 29 MB of address space); one started as a new
interpreter carries only what it imports itself.

``FreshProcess`` is a multiprocessing process whose start runs ``python -c
CODE FD`` (``posix_spawn``: no copy of this process's page tables either), with
the same interpreter flags, the same environment and standard input on
/dev/null as a multiprocessing child has, and the one descriptor ``FD``
inherited to talk over. ``join``, ``is_alive``, ``exitcode``, ``terminate`` and
``close`` are multiprocessing's own, so ``processes.reap`` tears it down like
any worker. Unlike multiprocessing's spawn start method it does not import the
parent's ``__main__`` again and starts no resource tracker.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from multiprocessing import popen_fork, util
from multiprocessing.context import ForkProcess
from typing import Any

HASH_SEED = "PYTHONHASHSEED"


class _Spawned(popen_fork.Popen):
    """multiprocessing's fork ``Popen`` (its wait, poll and signals), started by
    ``posix_spawn`` of a new interpreter instead of ``fork``."""

    method = "fresh"

    def _launch(self, process_obj: Any) -> None:
        assert isinstance(process_obj, FreshProcess)
        sentinel, child_end = os.pipe()  # the child holds child_end: EOF once it is gone
        passed = (child_end, process_obj.fd)
        argv = [sys.executable, *_interpreter_flags(), "-c", process_obj.code,
                str(process_obj.fd)]
        try:
            for fd in passed:
                os.set_inheritable(fd, True)
            self.pid = os.posix_spawn(
                sys.executable, argv, process_obj.env,
                file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)],
                setsigmask=(),  # whatever this process blocks while it starts one
            )
        except BaseException:
            os.close(sentinel)
            raise
        finally:
            os.set_inheritable(process_obj.fd, False)
            os.close(child_end)
        self.sentinel = sentinel
        self.finalizer = util.Finalize(self, os.close, (sentinel,))


class FreshProcess(ForkProcess):
    """``python -c code fd`` in a new interpreter; ``fd`` stays open in it."""

    def __init__(self, code: str, fd: int, name: str,
                 env: Mapping[str, str] | None = None) -> None:
        super().__init__(name=name)
        self.code = code
        self.fd = fd
        self.env = dict(os.environ if env is None else env)

    @staticmethod
    def _Popen(process_obj: Any) -> popen_fork.Popen:  # noqa: N802 - multiprocessing's name
        return _Spawned(process_obj)


def _interpreter_flags() -> list[str]:
    """This interpreter's options (-X, -W, -O...), as multiprocessing passes them on."""
    flags: list[str] = getattr(subprocess, "_args_from_interpreter_flags")()  # noqa: B009
    return flags
