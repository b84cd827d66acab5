"""The ``shmstress`` command line: the parser of every subcommand, and exit codes.

Every subcommand turns a ``ShmstressError`` into one line on stderr and its
exit code (2 for usage and configuration), so no user ever sees a traceback
for a mistake of theirs; SIGINT and SIGTERM end any of them with exit 130.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Collection, Sequence
from typing import Any, cast

from shmstress.cli.args import EPILOG, OneLineErrors
from shmstress.cli.commands import COMMANDS, command_word
from shmstress.core.errors import ShmstressError
from shmstress.core.exit_reason import ExitCode, ExitReason
from shmstress.core.signals import interruptible


class _Version(argparse.Action):
    """``--version``: the package's version, looked up only when asked for (its metadata)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 **options: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **options)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        import platform

        from shmstress.core.provenance import package_version

        print(f"shmstress {package_version()} (Python {platform.python_version()})")
        parser.exit()


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand (``commands`` None: the whole command line, as the
    documentation shows it), or of the subcommands in ``commands`` with a one-line
    stand-in for each other one (``cli.commands``)."""
    parser = OneLineErrors(
        prog="shmstress",
        description="Stress a shared-memory tracker with worker processes and check invariants.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    # Subcommand parsers are OneLineErrors too (argparse uses the parent's class).
    sub = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
    )
    loaded = {command.module for command in COMMANDS
              if commands is None or command.name in commands}
    registered: set[str] = set()
    for command in COMMANDS:
        if command.module not in loaded:
            sub.add_parser(command.name, help=command.help)
        elif command.module not in registered:  # with every other command it defines
            registered.add(command.module)
            importlib.import_module(command.module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    word = command_word(words)
    known = any(command.name == word for command in COMMANDS)
    parser = build_parser({word} if known and word is not None else ())
    args = parser.parse_args(words)
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
