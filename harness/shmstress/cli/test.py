"""``shmstress test FILE.py:FUNCTION``: plain multiprocessing code under controlled scheduling."""

from __future__ import annotations

import argparse
import random
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from shmstress.cli.args import EPILOG, strategy_from_args
from shmstress.cli.commands import add_command
from shmstress.controlled.strategies import (
    EXPLORING,
    PLAIN_MIX,
    SPIN_RULES,
    DporSpec,
    ExhaustiveSpec,
    FreeRunSpec,
    bound_words,
    mix_words,
)
from shmstress.core.config import OUT_ENV, default_out
from shmstress.core.errors import ReplayDivergedError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.files import ArtifactError, require_writable, write_text_atomically
from shmstress.core.signals import interruptible
from shmstress.plain.scenario import ScenarioRef, traced_code
from shmstress.plain.spec import FreeSpec, PlainSpec

if TYPE_CHECKING:
    from shmstress.plain.checkpoint import Checkpointing
    from shmstress.repro.plain_bundle import PlainBundle
    from shmstress.repro.shrink import ShrinkOptions

# The engine, the renderers and the bundles are imported by the handlers that use them
# (``cli.commands``): ``shmstress test --help`` needs none of them.

_DESCRIPTION = textwrap.dedent("""\
    Run a scenario, an ordinary function that starts multiprocessing processes and
    shares Values, Arrays and locks with them, under controlled scheduling: one
    process runs at a time and a strategy picks who takes each step (every lock
    operation, every read and write of a Value or Array element, every start and
    join). An exception or failed assert in any process, a deadlock, or a wait
    nobody can end is a failure: it is printed as a short interleaving and saved as
    a bundle that `shmstress replay` reruns step for step.

    examples:
      shmstress test examples/plain/counter.py:racy
      shmstress test tests/scenarios.py:transfer --strategy random_walk --executions 5000
      shmstress test mymodule:scenario --seed 7
      shmstress test examples/plain/counter.py:racy --mode free --noise 0.2
      shmstress test examples/plain/numpy_counts.py:racy
      shmstress test tests/scenarios/libraries.py:distinct_keys --trace shared_memory_dict
      shmstress test examples/plain/counter.py:locked --executions 10000 --checkpoint c.ckpt
    """)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(
        sub, "test",
        description=_DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", metavar="FILE.py:FUNCTION",
                        help="the scenario: a function in a file, or MODULE:FUNCTION (a "
                        "module found as `python -m` finds it: the current directory first)")
    parser.add_argument("--trace", action="append", default=[], metavar="CODE[,CODE]",
                        help="also make points of the shared-memory accesses in this code: a "
                        "module, package, file or folder (repeatable); numpy arrays over "
                        "SharedMemory, libraries from site-packages")
    parser.add_argument("--no-auto-trace", action="store_true",
                        help="do not trace the scenario's own project by default (its folder "
                        "up to the one with pyproject.toml, setup.py or .git; .venv and "
                        "site-packages inside it excluded): only what --trace names")
    parser.add_argument("--accept-uncontrolled", action="store_true",
                        help="a search that found nothing but saw code outside shmstress's "
                        "control (shared memory changed with no step, an unknown shared "
                        "mapping, a thread) exits 0, not 6; its lines are printed still")
    parser.add_argument("--no-self-check", action="store_true",
                        help="do not look for what is outside control (saves a checksum of "
                        "the shared buffers at every point; a clean run then says nothing "
                        "of what it could not see)")
    parser.add_argument("--mode", choices=("controlled", "free"), default="controlled",
                        help="controlled: a strategy picks who takes each step (default); "
                        "free: the processes run on their own, one step at a time, in the "
                        "order the OS gives them, with noise at each point")
    parser.add_argument("--noise", type=float, default=None, metavar="P",
                        help="free mode: probability of a yield or a short sleep at a point "
                        "(default 0.1)")
    parser.add_argument("--max-sleep-us", type=float, default=None, metavar="US",
                        help="free mode: longest sleep of the noise, in microseconds "
                        "(default 100)")
    parser.add_argument("--strategy", choices=EXPLORING, default=None,
                        help="how to pick who goes next (default portfolio: "
                        f"{mix_words(PLAIN_MIX)})")
    parser.add_argument("--depth", type=int, default=None,
                        help="PCT's bug depth: orderings a bug needs, plus one (default 3)")
    parser.add_argument("--spin", choices=SPIN_RULES, default=None,
                        help="PCT: what a process that sleeps or yields does (default demote)")
    parser.add_argument("--bound", type=int, default=None,
                        help="exhaustive, dpor: preemptions allowed per execution (default: "
                        f"exhaustive {ExhaustiveSpec.bound}, dpor {bound_words(DporSpec.bound)};"
                        " dpor takes -1: none)")
    parser.add_argument("--executions", type=int, default=1000, metavar="N",
                        help="executions to try before calling it clean (default 1000)")
    parser.add_argument("--seed", type=int, help="seed of the search (default: random, "
                        "printed); exhaustive and dpor take none (their search is the same "
                        "whatever it is): it only seeds the processes' random, default 0")
    parser.add_argument("--max-steps", type=int, default=PlainSpec.max_steps, metavar="N",
                        help=f"steps per execution (default {PlainSpec.max_steps:,})")
    parser.add_argument("--max-processes", type=int, default=PlainSpec.max_processes - 1,
                        metavar="N", help="processes a scenario may start; one more ends "
                        f"the search with exit {int(ExitCode.LIMIT)}, a limit, not a failure "
                        f"(default {PlainSpec.max_processes - 1})")
    parser.add_argument("--mailbox-mib", type=int, default=PlainSpec.mailbox_mib,
                        metavar="N", help="room on the board for the queue and pipe messages "
                        f"not yet taken, in MiB (default {PlainSpec.mailbox_mib})")
    parser.add_argument("--stop-timeout", type=float, default=PlainSpec.stop_timeout,
                        metavar="S", help="seconds a process may run without reaching its "
                        f"next point before it is reported hung (default "
                        f"{PlainSpec.stop_timeout:g})")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help=f"where a failure's bundle goes (default ${OUT_ENV} or "
                        "shmstress-out)")
    parser.add_argument("--require-coverage", action="store_true",
                        help="controlled: a clean search whose coverage was thin (every "
                        "execution cut at --max-steps, a bounded search cut short) exits 5")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the summary as JSON (written whole or not at all): the "
                        "same fields as printed, as plain numbers, the failing execution "
                        "numbered as printed")
    parser.add_argument("--checkpoint", metavar="FILE",
                        help="save the search in FILE every minute and on Ctrl-C or SIGTERM: "
                        "the same command again resumes it at the execution where it stopped "
                        "(without --seed, with the seed it saved) and takes the executions an "
                        "uninterrupted search takes; after its end it gives its result again; "
                        "a checkpoint of another search is refused")
    parser.set_defaults(handler=_cmd_test)


def replay_plain_bundle(path: Path, bundle: PlainBundle, log: str | None) -> int:
    """``shmstress replay`` of a plain bundle: the verdict, and the interleaving again."""
    from shmstress.render.plain_log import log_lines
    from shmstress.render.replay_text import render_plain_replay
    from shmstress.repro.plain_replay import replay_plain

    report = replay_plain(bundle)
    print(render_plain_replay(report, bundle, path))
    if report.outcome.failure is not None and report.outcome.failed and log:
        written = write_text_atomically(Path(log), "\n".join(log_lines(report.outcome))
                                        + "\n", "the log")
        print(f"  log: {written}")
    return int(report.exit_code)


def shrink_plain_bundle(source: Path, bundle: PlainBundle, output: Path,
                        options: ShrinkOptions) -> int:
    """``shmstress shrink`` of a plain bundle: before and after, and the replay command."""
    from shmstress.repro.bundle import replay_command
    from shmstress.repro.plain_bundle import write_plain_bundle
    from shmstress.repro.plain_shrink import shrink_plain

    with interruptible():
        report = shrink_plain(bundle, options)
    if report is None:
        raise ReplayDivergedError(
            f"{source} does not reproduce its failure, so there is nothing to shrink "
            f"(see `{replay_command(source)}`)")
    target = write_plain_bundle(report.bundle, output)
    before, after = report.before, report.after
    print(f"shmstress shrink: {source} -> {target}")
    print(f"  {'':8} {'preemptions':>12} {'steps':>8}")
    for name, size in (("before", before), ("after", after)):
        print(f"  {name:8} {size.preemptions:>12} {size.steps:>8}")
    print(f"  {report.executions:,} executions in {report.elapsed_s:.2f} s")
    print(f"  still fails with: {report.bundle.failure.message}")
    print("  replay it:")
    print(f"    {replay_command(target)}")
    return 0


def _what_is_saved(checkpoint: Checkpointing) -> str:
    """What an interrupted search left, read back from the file: a signal before the first
    save (while the host starts) leaves no checkpoint, or the one it resumed from."""
    from shmstress.plain.checkpoint import CheckpointError

    try:
        header = checkpoint.read_header()
    except CheckpointError:
        header = None
    if header is None:
        return (f"nothing was saved in {checkpoint.path} (stopped before the search's "
                "first save): the same command starts it again")
    return (f"the search is saved in {checkpoint.path} after {header.executions:,} "
            "executions: the same command resumes it")


def _cmd_test(args: argparse.Namespace) -> int:
    from shmstress.core.errors import ConfigError

    free = args.mode == "free"
    misplaced = [flag for flag, value, wanted in (
        ("--strategy", args.strategy, False), ("--depth", args.depth, False),
        ("--spin", args.spin, False), ("--bound", args.bound, False),
        ("--noise", args.noise, True), ("--max-sleep-us", args.max_sleep_us, True))
        if value is not None and wanted != free]
    if misplaced:
        raise ConfigError(f"{', '.join(misplaced)} only appl{'ies' if len(misplaced) == 1 else 'y'}"
                          f" with --mode {'controlled' if free else 'free'}")
    strategy = FreeRunSpec() if free else strategy_from_args(args)
    if args.executions < 1:
        raise ConfigError(f"--executions must be at least 1, got {args.executions}")
    trace = tuple(item for given in args.trace for item in given.split(",") if item)
    if any(not item for given in args.trace for item in given.split(",")):
        raise ConfigError("--trace has an empty item; name a module, package, file or folder")
    free_spec = FreeSpec(0.1 if args.noise is None else args.noise,
                         100.0 if args.max_sleep_us is None else args.max_sleep_us)
    ref = ScenarioRef.parse(args.scenario)
    spec = PlainSpec(ref, max_processes=args.max_processes + 1,
                     max_steps=args.max_steps, stop_timeout=args.stop_timeout,
                     trace=traced_code(ref, trace, not args.no_auto_trace),
                     self_check=not args.no_self_check, mailbox_mib=args.mailbox_mib,
                     free=free_spec if free else None)
    spec.validate()
    # the engine, once the command line is known to be right (a mistake answers at once)
    from shmstress.cli.run import keep, verdict, write_json
    from shmstress.plain.checkpoint import Checkpointing
    from shmstress.plain.runner import Exploration, ExplorationInterrupted, explore
    from shmstress.render.plain_log import log_lines
    from shmstress.render.plain_report import result_json, result_lines
    from shmstress.repro.plain_bundle import from_outcome, write_plain_bundle

    out = Path(args.out or default_out())
    require_writable(out, "the --out directory", directory=True)
    if args.json:
        require_writable(Path(args.json), "the --json file")
    checkpoint = None
    if args.checkpoint:
        require_writable(Path(args.checkpoint), "the --checkpoint file")
        checkpoint = Checkpointing(Path(args.checkpoint), log=lambda line: print(
            f"shmstress test: {line}", file=sys.stderr, flush=True))
    saved = checkpoint.read_header() if checkpoint is not None else None
    seed = (args.seed if args.seed is not None else saved.identity.seed if saved is not None
            else 0 if strategy.seedless else random.SystemRandom().randrange(1 << 31))
    exploration = Exploration(strategy, seed, args.executions)
    try:
        result = explore(spec, exploration, checkpoint=checkpoint)
    except ExplorationInterrupted as stopped:  # reported as a result: what ran, exit 130
        result = stopped.result
    except KeyboardInterrupt:
        if checkpoint is None:
            raise
        print(f"shmstress: interrupted; {_what_is_saved(checkpoint)}", file=sys.stderr,
              flush=True)
        return int(ExitCode.INTERRUPTED)
    bundle_path = log = None
    lines: list[str] = []
    unwritten: list[ArtifactError] = []
    if result.failing is not None and result.failing.failed:
        bundle = from_outcome(args.scenario, spec, result.strategy, seed,
                              result.failing_index, result.failing)
        try:  # a full disk: the failure is still printed, and still exit 1 (``verdict``)
            bundle_path = write_plain_bundle(bundle, out)
            log = write_text_atomically(  # its own name: never another run's log
                bundle_path.with_suffix(".log"), "\n".join(log_lines(result.failing)) + "\n",
                "the log", exclusive=True)
            lines.append(f"  log: {log}")
        except ArtifactError as exc:
            unwritten.append(exc)
    print("\n".join(result_lines(result, args.scenario, bundle_path, args.require_coverage)
                    + lines))
    code = int(result.exit_code)
    if (args.require_coverage and result.exit_code is ExitCode.CLEAN
            and result.coverage is not None and result.coverage.thin()):
        code = int(ExitCode.THIN_COVERAGE)
    elif result.exit_code is ExitCode.NOT_CONTROLLED and args.accept_uncontrolled:
        code = int(ExitCode.CLEAN)
    if args.json:
        unwritten += keep(lambda: write_json(Path(args.json), result_json(
            result, args.scenario, bundle_path, log, code)))
    if result.limit is not None:  # a limit, not a bug: its own line, as an error has
        print(f"shmstress: limit: {result.limit}", file=sys.stderr)
    elif result.interrupted:
        print(f"shmstress: interrupted after {result.executions:,} executions", file=sys.stderr)
    return verdict(code, unwritten)
