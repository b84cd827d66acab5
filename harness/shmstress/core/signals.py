"""One policy for SIGINT and SIGTERM in every long-running command: stop soon, tear down, report.

Inside ``interruptible()`` both signals raise ``Interrupted`` (a KeyboardInterrupt, so
tracker code that catches ``Exception`` cannot swallow it) and are also remembered in
the context's ``InterruptFlag``: Python discards an exception raised where it cannot
propagate (an at-fork callback, a ``__del__``), so a loop that must notice a signal
also polls ``flag.fired`` (or calls ``checkpoint()``). Teardown runs ``shielded()``: a
signal then only sets the flag, so reaping workers and unlinking segments is never cut
short.

A signal is never lost. One that lands while shielded, or whose exception Python
discarded (seen through ``sys.unraisablehook``), stays *pending*: the next
``flag.check()`` or ``checkpoint()`` raises it, and if the command finishes without
either, the outermost context raises it on the way out, so the command still exits 130.
A ``fork()`` inside the context runs with both signals blocked, and the child starts
with the workers' policy (SIGINT ignored: the coordinator tears the workers down;
SIGTERM default) before they are unblocked: a signal that lands during ``fork()`` is
handled by the parent once the fork is done, never by a half-born worker.

Contexts nest: an inner ``interruptible()`` (a run inside a campaign) shares the outer
one's flag and handlers and arms it for its duration, so a campaign that runs its own
bookkeeping ``shielded()`` (a signal must not split a results line from its bundle)
is still interrupted inside each trial, and sees the flag between trials. The
handlers live only as long as the outermost context, except the command's own
(``until_exit``): the entry point installs it before anything else is imported, and
it stays, shielded, while the interpreter exits.

A command that starts with SIGINT ignored (a background job of a script, ``cmd &``)
keeps ignoring it for its whole run, as shells and Python itself do: the handler
takes SIGINT over but lets it pass, so that a command it execs still starts with
SIGINT at its default (a distributed campaign's pytest hears the SIGINT it is sent).
SIGTERM always ends the command.

The command imports this module first (``cli.entry``), and a signal before the policy
is installed meets Python's defaults, so it imports only small modules of the standard
library: no dataclasses, no typing.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: the command tears down and exits 130."""


class InterruptFlag:
    """Whether a signal came (``fired``), and whether it raises where it lands (``armed``).

    ``pending``: a signal came whose ``Interrupted`` no code has seen yet (it landed while
    shielded, or Python discarded the exception); ``check`` delivers it. (Not a dataclass:
    importing dataclasses would double the time before the policy is installed.)
    """

    __slots__ = ("armed", "fired", "pending", "signal")

    def __init__(self) -> None:
        self.fired = False
        self.armed = True
        self.signal = 0  # the latest signal that came
        self.pending = False

    def check(self) -> None:
        """Raise ``Interrupted`` if a signal came and the code here may be interrupted."""
        if self.fired and self.armed:
            self.pending = False
            raise Interrupted

    def acknowledge(self) -> None:
        """The caller acts on ``fired`` itself (stops, reports, exits 130): nothing pends."""
        self.pending = False


class _Handler:
    """The installed handler; it carries the flag so nested contexts find and share it."""

    def __init__(self, obeyed: frozenset[int]) -> None:
        self.flag = InterruptFlag()
        self.obeyed = obeyed  # the others were ignored when the policy was installed
        self.mask_before_fork: set[int | signal.Signals] | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if signum not in self.obeyed:
            return
        flag = self.flag
        flag.fired = True
        flag.signal = signum
        if flag.armed:
            raise Interrupted
        flag.pending = True


_GETSIGNAL: Callable[[int], object] = importlib.import_module("_signal").getsignal
"""``signal.getsignal`` without its conversion to an enum: this runs at every fork (in the
parent and the child) and at every checkpoint."""


def _installed() -> _Handler | None:
    handler = _GETSIGNAL(signal.SIGTERM)
    return handler if isinstance(handler, _Handler) else None


def checkpoint() -> None:
    """Raise ``Interrupted`` if a signal came and this code may be interrupted: for loops
    that wait in C calls for a long time, or that run after a fork may have eaten the
    signal's exception. Costs one C call and two attribute reads."""
    handler = _installed()
    if handler is not None and handler.flag.fired and handler.flag.armed:
        handler.flag.check()


def _unraisable_hook(
    previous: Callable[[sys.UnraisableHookArgs], object],
) -> Callable[[sys.UnraisableHookArgs], object]:
    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        handler = _installed()
        if isinstance(unraisable.exc_value, Interrupted) and handler is not None:
            handler.flag.pending = True  # discarded where it was raised: deliver it later
            return
        previous(unraisable)

    return hook


@contextlib.contextmanager
def interruptible(*, until_exit: bool = False) -> Iterator[InterruptFlag]:
    """SIGINT and SIGTERM raise ``Interrupted`` in the block, and set the yielded flag.

    Outside the main thread (an execnet gateway, a test's thread) signals cannot be
    handled here: the block runs with a flag that never fires. ``until_exit`` (the
    command's entry point): when the block ends the handlers stay installed, shielded,
    so that a signal while the interpreter exits neither prints a traceback nor kills
    it by the signal's default; the exit code the command returned stands.
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
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    handler = _Handler(frozenset({signal.SIGTERM} if ignored else SIGNALS))
    try:
        previous = {signum: signal.signal(signum, handler) for signum in SIGNALS}
    except ValueError:  # not the main thread
        yield handler.flag
        return
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _unraisable_hook(previous_hook)
    try:
        yield handler.flag
        if handler.flag.pending:  # the block finished, but a signal's exception was lost
            handler.flag.check()
    finally:
        if until_exit:
            handler.flag.armed = False
        else:
            for signum, action in previous.items():
                signal.signal(signum, action)
            sys.unraisablehook = previous_hook


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


# -- fork ---------------------------------------------------------------------------------------
def _before_fork() -> None:
    handler = _installed()
    if handler is not None:
        handler.mask_before_fork = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


def _restore_mask(handler: _Handler) -> None:
    mask, handler.mask_before_fork = handler.mask_before_fork, None
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _after_fork_in_parent() -> None:
    handler = _installed()
    if handler is not None:
        # A signal that came during the fork is handled here; if its exception is discarded
        # (an at-fork callback cannot raise), the unraisable hook keeps it pending.
        _restore_mask(handler)


def _after_fork_in_child() -> None:
    handler = _installed()
    if handler is not None:
        # The workers' policy before anything can arrive: Ctrl-C is the coordinator's to
        # handle (a pending one is discarded here), SIGTERM ends the worker.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _restore_mask(handler)


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)
