"""One policy for SIGINT and SIGTERM in every long-running command: stop soon, tear down, report.

Inside ``interruptible()`` both signals raise ``Interrupted`` (a KeyboardInterrupt, so
tracker code that catches ``Exception`` cannot swallow it) and are also remembered in
the context's ``InterruptFlag``: Python discards an exception raised where it cannot
propagate (an at-fork callback, a ``__del__``), so a loop that must notice a signal
also polls ``flag.fired``. Teardown runs ``shielded()``: a signal then only sets the
flag, so reaping workers and unlinking segments is never cut short.

Contexts nest: an inner ``interruptible()`` (a run inside a campaign) shares the outer
one's flag and handlers and arms it for its duration, so a campaign that runs its own
bookkeeping ``shielded()`` (a signal must not split a results line from its bundle)
is still interrupted inside each trial, and sees the flag between trials. The
handlers live only as long as the outermost context.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: the command tears down and exits 130."""


@dataclass
class InterruptFlag:
    """Whether a signal came (``fired``), and whether it raises where it lands (``armed``)."""

    fired: bool = False
    armed: bool = True
    signal: int = 0  # the latest signal that came

    def check(self) -> None:
        """Raise ``Interrupted`` if a signal came while its exception could not propagate."""
        if self.fired and self.armed:
            raise Interrupted


class _Handler:
    """The installed handler; it carries the flag so nested contexts find and share it."""

    def __init__(self) -> None:
        self.flag = InterruptFlag()

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.flag.fired = True
        self.flag.signal = signum
        if self.flag.armed:
            raise Interrupted


def _installed() -> _Handler | None:
    handler = signal.getsignal(signal.SIGTERM)
    return handler if isinstance(handler, _Handler) else None


@contextlib.contextmanager
def interruptible() -> Iterator[InterruptFlag]:
    """SIGINT and SIGTERM raise ``Interrupted`` in the block, and set the yielded flag.

    Outside the main thread (an execnet gateway, a test's thread) signals cannot be
    handled here: the block runs with a flag that never fires.
    """
    outer = _installed()
    if outer is not None:
        flag = outer.flag
        armed = flag.armed
        flag.armed = True
        try:
            flag.check()  # a signal that came while shielded stops new work at once
            yield flag
        finally:
            flag.armed = armed
        return
    handler = _Handler()
    try:
        previous = {signum: signal.signal(signum, handler) for signum in SIGNALS}
    except ValueError:  # not the main thread
        yield handler.flag
        return
    try:
        yield handler.flag
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Teardown that a signal must not cut short: inside, a signal only sets the flag."""
    handler = _installed()
    if handler is None:
        yield
        return
    armed = handler.flag.armed
    handler.flag.armed = False
    try:
        yield
    finally:
        handler.flag.armed = armed
