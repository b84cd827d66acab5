"""``shmstress bench``: the benchmark figures of this machine, as ratios from one run."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from shmstress.bench.figures_page import figures_page, measured_here
from shmstress.bench.pool import usable_cpus
from shmstress.bench.sctbench.programs import BUGGY
from shmstress.bench.sctbench.run import (
    PAPER_EXECUTIONS,
    STRATEGIES,
    SUITE,
    TWIN_STRATEGIES,
    SuiteOptions,
    render_suite,
    report_json,
    run_suite,
)
from shmstress.bench.suite import (
    ALL,
    LIBRARY_RACE,
    RACY_DRA,
    WARMUP_S,
    BenchOptions,
    bench_sections,
    run_bench,
    target_names,
)
from shmstress.cli.args import with_examples
from shmstress.cli.commands import add_command
from shmstress.cli.run import verdict
from shmstress.core.config import DEFAULT_NOISE
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.files import ArtifactError, require_writable, write_text_atomically
from shmstress.core.noise import NOISE_POLICIES, NoiseConfig
from shmstress.core.provenance import current_provenance
from shmstress.core.shard import WHOLE, Shard


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = add_command(
        sub, "bench",
        description="Benchmarks on this machine, printed as figures and ratios from one run.",
        **with_examples(
            "shmstress bench   # every section: several minutes",
            "shmstress bench --section free --section controlled   # throughput only",
            "shmstress bench --section detection --variant original --trials 10",
            "shmstress bench --section rate --variant all   # every tracker's racy variants",
            "shmstress bench --section plain   # plain multiprocessing code, next to Frontrun",
            "shmstress bench --section learning --trials 10   # a second run with saved learning",
            "shmstress bench --section linearizability   # the checker on 1,000 operations",
            "shmstress bench --json bench.json   # the figures as JSON too",
            "shmstress bench --markdown docs/figures.md   # and as a page the docs include",
            "shmstress bench --suite sctbench --executions 1000 --jobs 2   # two trials at once",
            "shmstress bench --suite sctbench --program fsbench_bad --strategy default "
            "--twin-strategy default --seeds 1 --checkpoint ckpt/   # Ctrl-C, then the same "
            "command again resumes",
            "shmstress bench --suite sctbench --shard 2/4 --checkpoint shard-2/   # one CI job "
            "of four (docs/how-to/ci-matrix.md)",
        ),
    )
    bench.add_argument("--trials", type=int, default=20,
                       help="trials per racy variant (default 20)")
    bench.add_argument("--budget", type=float, default=5.0, metavar="S",
                       help="seconds per detection trial before it counts as missed (default 5)")
    bench.add_argument("--free-seconds", type=float, default=3.0, metavar="S",
                       help="seconds of the free-mode throughput run (default 3)")
    bench.add_argument("--clean-points", type=int, default=1_000_000, metavar="N",
                       help="points each correct variant must run clean (default 1000000)")
    bench.add_argument("--noise", type=float, default=DEFAULT_NOISE, metavar="P",
                       help=f"noise probability of the detection runs (default {DEFAULT_NOISE})")
    bench.add_argument("--noise-policy", choices=NOISE_POLICIES, default=NoiseConfig().policy,
                       help="noise policy of the free-mode and clean runs (detection and rate "
                       f"measure every policy; default {NoiseConfig().policy})")
    bench.add_argument("--rate-seconds", type=float, default=3.0, metavar="S",
                       help="seconds of each steady-state rate run, with noise and without; "
                       "each mode runs twice, the modes in order then in reverse (default 3)")
    bench.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    bench.add_argument("--variant", action="append", metavar="NAME",
                       help=f"racy variant(s) the detection and rate sections time: a racy DRA "
                       f"variant, {LIBRARY_RACE} (a race inside a library call, where noise at "
                       f"the points cannot help), TRACKER/VARIANT of another tracker's racy "
                       f"variants and mutants, or {ALL} (default: the racy DRA variants and "
                       f"{LIBRARY_RACE})")
    bench.add_argument("--section", action="append",
                       choices=BenchOptions.sections,
                       help="measure only these sections (repeatable; default all)")
    bench.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    bench.add_argument("--markdown", metavar="FILE",
                       help="also write the figures as a Markdown page that names this command "
                       "and the machine (the documentation's figures page)")
    suite = bench.add_argument_group(
        "suites", "--suite sctbench: SCTBench's small programs, ported to plain multiprocessing "
        "code, under the default strategy (portfolio), PCT d=1/2/3, random walk, bounded "
        "exhaustive search, dpor and free mode with noise (instead of the sections)")
    suite.add_argument("--suite", choices=(SUITE,), help="run a benchmark suite instead of the "
                       "sections")
    suite.add_argument("--executions", type=int, default=PAPER_EXECUTIONS, metavar="N",
                       help=f"budget of executions per trial ({PAPER_EXECUTIONS}, the paper's)")
    suite.add_argument("--seeds", type=int, default=5, metavar="N",
                       help="seeds per program and strategy; medians over them (default 5)")
    suite.add_argument("--program", action="append", metavar="NAME",
                       help="buggy program(s) to run, with their twins (default all)")
    suite.add_argument("--strategy", action="append", metavar="KEY",
                       help="strategies to run: " + ", ".join(s.key for s in STRATEGIES)
                       + " (default all)")
    suite.add_argument("--twin-executions", type=int, metavar="N",
                       help="executions each twin runs per strategy (default --executions)")
    suite.add_argument("--twin-strategy", action="append", metavar="KEY",
                       help="strategies the twins run under (repeatable; default "
                       + ", ".join(TWIN_STRATEGIES) + ")")
    suite.add_argument("--jobs", type=int, default=len(usable_cpus()), metavar="N",
                       help="trials run at once, each in a process of its own on a CPU of its "
                       "own (default: the usable CPUs, here %(default)s; 1: one after the "
                       "other, in this process); the figures do not depend on it")
    suite.add_argument("--checkpoint", metavar="DIR",
                       help="keep each trial's progress in DIR (saved every minute and on "
                       "Ctrl-C or SIGTERM) and each finished trial's result: the same command "
                       "run again with the same DIR skips the finished trials and resumes "
                       "the others at the execution where they stopped, with the figures of "
                       "an uninterrupted run; DIR belongs to one command, another is refused")
    suite.add_argument("--shard", metavar="I/N",
                       help="run only shard I of N (1 <= I <= N): the I-th of N contiguous "
                       "blocks of the suite's trials, each with its seed; needs --checkpoint "
                       "DIR, where their results stay: every shard's DIR gathered into one, "
                       "the same command without --shard prints the whole table")
    bench.set_defaults(handler=_cmd_bench, parser=bench)


def _validate(args: argparse.Namespace) -> None:
    """Every option checked before the first section runs, not when its section comes."""
    problems = []
    for name, value in (("--trials", args.trials), ("--clean-points", args.clean_points)):
        if value < 1:
            problems.append(f"{name} must be >= 1, got {value}")
    for name, value in (("--budget", args.budget), ("--free-seconds", args.free_seconds)):
        if not (value > 0 and math.isfinite(value)):
            problems.append(f"{name} must be a finite number > 0 of seconds, got {value:g}")
    if not (args.rate_seconds > WARMUP_S and math.isfinite(args.rate_seconds)):
        problems.append(f"--rate-seconds must be > the {WARMUP_S:g} s warm-up it leaves out, "
                        f"got {args.rate_seconds:g}")
    if not 0 <= args.noise <= 1:
        problems.append(f"--noise must be a probability in [0, 1], got {args.noise:g}")
    if args.seed < 0:
        problems.append(f"--seed must be >= 0, got {args.seed}")
    unknown = [v for v in args.variant or () if v not in target_names()]
    if unknown:
        problems.append(f"--variant {', '.join(unknown)}: the bench times the racy DRA "
                        f"variants {', '.join(RACY_DRA)}, and "
                        f"{', '.join(n for n in target_names() if n not in RACY_DRA)}")
    if args.suite:
        problems.extend(_suite_problems(args))
    else:
        problems += [f"{option} {what}: it needs --suite" for option, what in (
            ("--checkpoint", "keeps a suite's trials"), ("--shard", "splits a suite's trials"))
            if getattr(args, option[2:])]
    if problems:
        raise ConfigError("; ".join(problems))
    if args.json:
        require_writable(Path(args.json), "the --json file")
    if args.markdown:
        require_writable(Path(args.markdown), "the --markdown file")
    if args.checkpoint:
        require_writable(Path(args.checkpoint), "the --checkpoint directory", directory=True)


def _suite_problems(args: argparse.Namespace) -> list[str]:
    problems = []
    for name, value in (("--executions", args.executions), ("--seeds", args.seeds),
                        ("--twin-executions", args.twin_executions), ("--jobs", args.jobs)):
        if value is not None and value < 1:
            problems.append(f"{name} must be >= 1, got {value}")
    if args.section:
        problems.append("--section and --suite exclude each other: a suite runs instead of "
                        "the sections")
    if args.shard is not None:
        try:
            Shard.parse(args.shard)
        except ConfigError as exc:
            problems.append(str(exc))
        if not args.checkpoint:
            problems.append("--shard keeps its trials' results for the merge in --checkpoint "
                            "DIR: add it")
    names = {p.name for p in BUGGY}
    unknown = [name for name in args.program or () if name not in names]
    if unknown:
        problems.append(f"--program {', '.join(unknown)}: not a ported buggy program of "
                        f"{args.suite} (shmstress.bench.sctbench.programs lists them)")
    keys = [s.key for s in STRATEGIES]
    for option, given in (("--strategy", args.strategy), ("--twin-strategy", args.twin_strategy)):
        unknown = [key for key in given or () if key not in keys]
        if unknown:
            problems.append(f"{option} {', '.join(unknown)}: choose from {', '.join(keys)}")
    return problems


def _cmd_suite(args: argparse.Namespace) -> int:
    options = SuiteOptions(
        executions=args.executions, seeds=args.seeds, seed=args.seed,
        programs=tuple(args.program or ()), strategies=tuple(args.strategy or ()),
        twin_executions=args.twin_executions,
        twin_strategies=tuple(args.twin_strategy or TWIN_STRATEGIES),
    )
    checkpoint = Path(args.checkpoint) if args.checkpoint else None
    report = run_suite(options, log=lambda line: print(line, file=sys.stderr, flush=True),
                       jobs=args.jobs, checkpoint=checkpoint,
                       shard=Shard.parse(args.shard) if args.shard is not None else WHOLE)
    text = render_suite(report)
    print(text)
    code = int(ExitCode.INTERRUPTED) if report.cut is not None else int(ExitCode.CLEAN)
    if report.cut is not None and checkpoint is not None:
        print(f"{SUITE}: progress kept in {checkpoint}: run the same command again to resume",
              file=sys.stderr, flush=True)
    return _write_figures(args, code, report_json(report),
                          [("SCTBench ports", text.splitlines())])


def _cmd_bench(args: argparse.Namespace) -> int:
    _validate(args)
    if args.suite:
        return _cmd_suite(args)
    options = BenchOptions(
        trials=args.trials, budget_s=args.budget, free_seconds=args.free_seconds,
        clean_points=args.clean_points, noise=args.noise, policy=args.noise_policy,
        seed=args.seed,
        rate_seconds=args.rate_seconds,
        variants=tuple(args.variant) if args.variant else None,
        sections=tuple(args.section) if args.section else BenchOptions.sections,
    )
    report = run_bench(options, log=lambda line: print(line, file=sys.stderr, flush=True))
    sections = bench_sections(report)
    print("\n\n".join("\n".join(lines) for _, lines in sections))
    code = int(ExitCode.INTERRUPTED) if report.cut is not None else int(ExitCode.CLEAN)
    return _write_figures(args, code, asdict(report), sections)


def _write_figures(args: argparse.Namespace, code: int, data: object,
                   sections: list[tuple[str, list[str]]]) -> int:
    """``--json`` and ``--markdown``: the figures just printed, each file written whole."""
    problems: list[ArtifactError] = []
    if args.json:
        try:
            write_text_atomically(Path(args.json), json.dumps(data, indent=2) + "\n",
                                  "the bench figures")
        except ArtifactError as exc:
            problems.append(exc)
    if args.markdown:
        measured = measured_here(command_line(args), current_provenance(),
                                 datetime.now(UTC), len(usable_cpus()))
        try:
            write_text_atomically(Path(args.markdown), figures_page(sections, measured),
                                  "the figures page")
        except ArtifactError as exc:
            problems.append(exc)
    return verdict(code, problems)


def command_line(args: argparse.Namespace) -> str:
    """The ``shmstress bench`` command that ``args`` stand for: every option that differs
    from its default, in the parser's order, so a figures page names how to measure it
    again."""
    parser: argparse.ArgumentParser = args.parser
    words = ["shmstress", "bench"]
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        value = getattr(args, action.dest, None)
        if value is None or value == action.default:
            continue
        option = max(action.option_strings, key=len)
        if isinstance(action, argparse._StoreTrueAction):
            words.append(option)
        else:
            for item in value if isinstance(action, argparse._AppendAction) else [value]:
                words += [option, str(item)]
    return shlex.join(words)
