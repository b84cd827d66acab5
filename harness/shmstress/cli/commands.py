"""Which module defines each subcommand, and its line in ``shmstress --help``.

The command line imports only the module of the command it runs: importing every
subcommand (numpy, the plain-code engine, the benchmarks, the reports) took most of a
second before even ``shmstress --version`` could answer. The other commands get a
one-line stand-in, so ``shmstress --help`` still lists them all and a mistyped command
is still named among the choices. Each module builds its parser with ``add_command``,
so the line ``--help`` lists is the same whichever way it was built.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    name: str
    module: str  # its ``register(sub)`` adds the parser (and every other command it defines)
    help: str


COMMANDS = (
    Command("run", "shmstress.cli.run", "run one configuration and report violations"),
    Command("test", "shmstress.cli.test",
            "run plain multiprocessing code under controlled scheduling"),
    Command("lincheck", "shmstress.cli.lincheck",
            "test that a shared-memory object is linearizable, on programs and schedules "
            "Hypothesis draws"),
    Command("list", "shmstress.cli.trackers", "list trackers, variants, roles and invariants"),
    Command("sweep", "shmstress.cli.sweep", "unlink segments left by dead coordinators"),
    Command("bench", "shmstress.cli.bench",
            "measure points/s, detection times vs the no-noise baseline, clean runs, plain "
            "code's steps/s"),
    Command("campaign", "shmstress.cli.campaign",
            "run a grid of configurations x trials, one results.jsonl line per trial"),
    Command("merge", "shmstress.cli.campaign",
            "merge the directories of a campaign's shards into one results.jsonl"),
    Command("report", "shmstress.cli.campaign",
            "render results.jsonl files into PNG charts and an index.html"),
    Command("check", "shmstress.cli.check",
            "validate a tracker (plugin): probe every variant, then explore it briefly"),
    Command("log", "shmstress.cli.log",
            "show a recorded log, filtered by the objects its fields name, or worker pid"),
    Command("replay", "shmstress.cli.replay",
            "replay a repro bundle in controlled mode and say if it reproduces"),
    Command("shrink", "shmstress.cli.replay",
            "minimize a bundle's failing schedule and write a smaller bundle"),
    Command("show", "shmstress.cli.show",
            "draw a failure as a swimlane: one column per worker, one row per step"),
    Command("import-log", "shmstress.cli.import_log",
            "turn a klog/ktesting log of a real failure into a schedule of the model"),
)
HELP = {command.name: command.help for command in COMMANDS}


def add_command(sub: Any, name: str, **options: Any) -> argparse.ArgumentParser:
    """The parser of subcommand ``name``, with its line from ``COMMANDS``."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=HELP[name], **options)
    return parser


def command_word(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (the top level
    has no option that takes a value), or None (``--help``, ``--version``, nothing)."""
    return next((word for word in argv if not word.startswith("-")), None)
