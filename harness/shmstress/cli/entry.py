"""The ``shmstress`` command's entry point: the signal policy first, then the command line.

Importing the command line (numpy, every subcommand) and building its parser take half
a second on an idle machine and seconds on a loaded one. A signal in that time used to
meet Python's defaults: SIGINT printed a KeyboardInterrupt traceback, SIGTERM killed the
process (exit 143). So this module's first statement blocks both signals (one system
call, through the built-in ``_signal``: a signal that comes now waits, it is not lost),
and ``main`` imports the policy (``core.signals``, which loads
nothing heavy), installs it for the whole life of the process, and only then lets them
through and imports the rest; a signal during the imports or the parsing ends the
command like one during its work: one line, exit 130. Before ``main`` runs there is
only Python's own start-up and the import of this small module.

Once the command has returned, what is left is the interpreter's exit, whose garbage
collections walk every object the command made: a third of a second on a loaded
machine, a second after a run. Nothing of ours needs them (every worker is reaped,
every segment unlinked, every artifact closed), so the objects are frozen
(``gc.freeze``) out of their reach first.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stub; built in, loaded with Python

_BEFORE: set[int] = _signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGINT, _signal.SIGTERM))
"""The mask the process started with. SIGINT and SIGTERM wait from this first statement on:
``import signal`` builds its enums (a millisecond idle, ten times that on a loaded machine),
and a signal in that time met Python's default (a 0.05 s trial of the loaded suite)."""

import gc  # noqa: E402 - after the mask, on purpose
import signal  # noqa: E402
import sys  # noqa: E402

_POLICY = (signal.SIGINT, signal.SIGTERM)  # core.signals.SIGNALS, not imported yet


def main() -> int:
    """``shmstress``: what ``[project.scripts]`` and ``python -m shmstress`` run."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _POLICY)  # blocked at import; again, if run twice
    mask = _BEFORE
    try:
        from shmstress.core.signals import interruptible

        with interruptible(until_exit=True):
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # one that waited lands here
            from shmstress.cli.main import main as command

            code = command()
    except KeyboardInterrupt:  # during the imports or the parsing: nothing started yet
        from shmstress.core.exit_reason import ExitCode

        print("shmstress: interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        gc.freeze()
    return code
