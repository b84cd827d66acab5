"""Steps a harness built on plain mode takes itself, and code it runs aside from the schedule.

``shmstress lincheck`` records when each operation is called and when it returns as steps
of the execution, so that the history it checks is numbered as the interleaving it prints;
and it checks that history, at the end of the execution, against a sequential model made
of the same class. The model's shared objects are its own and live only for the check:
their accesses must be neither steps (nobody else runs then, and a replay would have to
take them) nor writes the self-check reports as outside control.

The runtime of this process is the one ``patch.install`` bound into the instrumented
classes; it is found there, so no module global has to carry it.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator

from shmstress.plain.board import G_HOST_SEGMENTS, NOBODY
from shmstress.plain.runtime import PlainRuntime

PLUMBING = True  # a step's site is the caller's line, not this module's


def _runtime() -> PlainRuntime | None:
    lock = importlib.import_module("multiprocessing.synchronize").Lock
    found = getattr(lock, "_runtime", None)
    return found if isinstance(found, PlainRuntime) else None


def mark(text: str) -> int:
    """Take a step labelled ``text``; its index, or -1 outside an execution."""
    runtime = _runtime()
    return -1 if runtime is None else runtime.point(text)


@contextlib.contextmanager
def aside() -> Iterator[None]:
    """Run the body as the host runs the scenario's import: shared objects work, but none
    of their operations is a step, and the self-check does not look."""
    runtime = _runtime()
    if runtime is None or not runtime.scheduled:
        yield
        return
    slot, check = runtime.slot, runtime.check
    # a segment made unscheduled counts as the host's (kept for the session); made aside,
    # it is the execution's, unlinked after it as the execution's own are
    host_segments = runtime.board.globals.mv[G_HOST_SEGMENTS]
    runtime.slot, runtime.check = NOBODY, None
    try:
        yield
    finally:
        runtime.slot, runtime.check = slot, check
        runtime.board.globals.mv[G_HOST_SEGMENTS] = host_segments
