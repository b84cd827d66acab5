"""The ``shmstress`` command line: the parser of every subcommand, and exit codes.

Every subcommand turns a ``ShmstressError`` into one line on stderr and its
exit code (2 for usage and configuration), so no user ever sees a traceback
for a mistake of theirs; SIGINT and SIGTERM end any of them with exit 130.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Sequence
from typing import cast

from shmstress.cli import bench, campaign, check, log, replay, run, show, sweep, test, trackers
from shmstress.cli.args import EPILOG, OneLineErrors
from shmstress.core.errors import ShmstressError
from shmstress.core.exit_reason import ExitCode, ExitReason
from shmstress.core.provenance import package_version
from shmstress.core.signals import interruptible

_SUBCOMMANDS = (run, test, trackers, sweep, bench, campaign, check, log, replay, show)
"""Each module adds its subcommand's parser and handler."""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrors(
        prog="shmstress",
        description="Stress a shared-memory tracker with worker processes and check invariants.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    python = platform.python_version()
    parser.add_argument("--version", action="version",
                        version=f"shmstress {package_version()} (Python {python})")
    # Subcommand parsers are OneLineErrors too (argparse uses the parent's class).
    sub = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
    )
    for module in _SUBCOMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with interruptible():
            code: int = args.handler(args)
    except ShmstressError as exc:
        print(f"shmstress: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("shmstress: interrupted", file=sys.stderr)
        return ExitReason.INTERRUPTED.exit_code
    except BrokenPipeError:
        # The reader closed the pipe (``| head``): no traceback, and none again when
        # Python flushes stdout at exit (the recipe of the ``signal`` module's docs).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return ExitCode.OUTPUT_CLOSED
    return code


if __name__ == "__main__":
    sys.exit(main())
