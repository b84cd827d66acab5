"""``shmstress lincheck FILE.py:Class``: is a shared-memory object linearizable?"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from shmstress.cli.args import with_examples
from shmstress.cli.commands import add_command
from shmstress.core.config import OUT_ENV, default_out
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.files import require_writable

# Hypothesis and the engine are imported by the handler (``cli.commands``): ``--help``
# needs neither.

_DESCRIPTION = textwrap.dedent("""\
    Test that an object shared by processes behaves as if its operations happened one at a
    time. Hypothesis draws programs of the class's operations in Lincheck's shape (a few
    operations before, 2 to --lanes processes of 1 to --ops operations each at the same
    time, a few after) and, at every step where more than one process can go, which one
    does; the plain engine runs each program under that schedule, and the history of
    calls and returns is checked against the class run one operation at a time (or
    --model). A history no sequential order explains is printed as a table, one column
    per process, above the interleaving that produced it; Hypothesis shrinks program and
    schedule together first, and the failure is saved as a bundle `shmstress replay`
    reruns step for step (and in Hypothesis' database, which the next run tries first).

    The class is made with no arguments; its operations are its class attribute
    `operations = {"put": st.integers(0, 9), "get": None}` (None: no argument; a tuple:
    one strategy per argument) or its methods marked @operation(...)
    (from shmstress.testing import operation). Arguments must be Python literals.
    """)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(
        sub, "lincheck", description=_DESCRIPTION,
        **with_examples(
            "shmstress lincheck examples/lincheck/counter.py:RacyCounter   # fails, shrunk",
            "shmstress lincheck examples/lincheck/bounded_queue.py:LockedQueue --model "
            "examples/lincheck/bounded_queue.py:QueueModel --max-examples 200",
            "shmstress lincheck examples/lincheck/kvmap.py:RacyResizeMap --key "
            "examples/lincheck/kvmap.py:key_of",
            "shmstress lincheck examples/lincheck/counter.py:RacyCounter --hypothesis-seed 3",
            "shmstress lincheck examples/lincheck/counter.py:RacyCounter --per-program 20"
            "   # the portfolio's schedules instead"))
    parser.add_argument("target", metavar="FILE.py:Class",
                        help="the class under test, in a file or MODULE:Class")
    parser.add_argument("--model", metavar="FILE.py:Class",
                        help="a class whose fresh objects are the sequential specification "
                        "(default: the class under test, one operation at a time)")
    parser.add_argument("--key", metavar="FILE.py:FUNCTION",
                        help="a function of an operation (.name, .args) whose value "
                        "partitions the history: operations on different keys are checked "
                        "apart, which keeps the check fast on long histories")
    parser.add_argument("--lanes", type=int, default=3,
                        help="the most processes running operations at once (default 3)")
    parser.add_argument("--ops", type=int, default=4,
                        help="the most operations in a process (default 4)")
    parser.add_argument("--prefix", type=int, default=2,
                        help="the most operations before the processes start (default 2)")
    parser.add_argument("--suffix", type=int, default=2,
                        help="the most operations after they all ended (default 2)")
    parser.add_argument("--max-examples", type=int,
                        help="Hypothesis examples, one execution each (default: the "
                        "Hypothesis profile's, 100)")
    parser.add_argument("--deadline", type=float, metavar="MS",
                        help="Hypothesis' deadline per example in ms (default: none)")
    parser.add_argument("--hypothesis-seed", type=int, metavar="N",
                        help="draw from this seed (the same seed, the same examples); as "
                        "Hypothesis' @seed does, it leaves the database out")
    database = parser.add_mutually_exclusive_group()
    database.add_argument("--database", metavar="DIR",
                          help="Hypothesis' example database (default: .hypothesis/examples "
                          "here, as Hypothesis keeps it)")
    database.add_argument("--no-database", action="store_true",
                          help="neither try stored failures first nor store this one")
    parser.add_argument("--per-program", type=int, default=0, metavar="N",
                        help="instead of drawing the schedule, explore each drawn program "
                        "with the default portfolio for N executions (for comparison)")
    parser.add_argument("--max-steps", type=int, default=5000,
                        help="steps of one execution before it ends with no verdict on the "
                        "object (Hypothesis draws another example instead; the summary "
                        "counts them) (default 5000)")
    parser.add_argument("--accept-uncontrolled", action="store_true",
                        help="a search that found nothing but saw code outside shmstress's "
                        "control (shared memory changed with no step, an unknown shared "
                        "mapping, a thread) exits 0, not 6; its lines are printed still")
    parser.add_argument("--out", metavar="DIR",
                        help=f"where the failure's program and bundle go (default ${OUT_ENV} "
                        "or shmstress-out/)")
    parser.set_defaults(handler=_cmd_lincheck)


def _cmd_lincheck(args: argparse.Namespace) -> int:
    for flag, value, least in (("--lanes", args.lanes, 2), ("--ops", args.ops, 1),
                               ("--prefix", args.prefix, 0), ("--suffix", args.suffix, 0),
                               ("--per-program", args.per_program, 0),
                               ("--max-steps", args.max_steps, 1),
                               ("--max-examples", args.max_examples or 1, 1)):
        if value < least:
            raise ConfigError(f"{flag} must be at least {least}, got {value}")
    if args.deadline is not None and not args.deadline > 0:
        raise ConfigError(f"--deadline must be above 0 ms, got {args.deadline}")
    out = Path(args.out or default_out())
    require_writable(out, "the --out directory", directory=True)

    import hypothesis
    from hypothesis.database import DirectoryBasedExampleDatabase

    from shmstress.testing.lincheck.check import lincheck_settings, plan_of
    from shmstress.testing.lincheck.program import Shape
    from shmstress.testing.lincheck.report import clean_lines, failure_lines, write_failure
    from shmstress.testing.lincheck.search import search

    changes: dict[str, Any] = {}
    if args.max_examples is not None:
        changes["max_examples"] = args.max_examples
    if args.deadline is not None:
        changes["deadline"] = args.deadline
    if args.no_database:
        changes["database"] = None
    elif args.database:
        changes["database"] = DirectoryBasedExampleDatabase(args.database)
    chosen = lincheck_settings(hypothesis.settings(**changes) if changes else None)
    plan = plan_of(args.target, model=args.model, key=args.key,
                   shape=Shape(args.lanes, args.ops, args.prefix, args.suffix),
                   max_steps=args.max_steps, per_program=args.per_program)
    started = time.monotonic()
    result = search(plan, chosen, seed=args.hypothesis_seed)
    elapsed = time.monotonic() - started
    if result.failing is None:
        print("\n".join(clean_lines(result, elapsed, args.accept_uncontrolled)))
        return int(result.exit_code(args.accept_uncontrolled))
    files = write_failure(result, out)
    print("\n".join(failure_lines(result, files)))
    if files.bundle is None:
        print("shmstress: the failure did not replay from its own file", file=sys.stderr)
    return int(ExitCode.FAILURE)
