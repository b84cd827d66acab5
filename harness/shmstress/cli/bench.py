"""``shmstress bench``: the benchmark figures of this machine, as ratios from one run."""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict
from pathlib import Path

from shmstress.bench.suite import RACY_DRA, WARMUP_S, BenchOptions, render_bench, run_bench
from shmstress.cli.run import verdict
from shmstress.core.config import DEFAULT_NOISE
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.files import ArtifactError, require_writable, write_text_atomically
from shmstress.core.noise import NOISE_POLICIES, NoiseConfig


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser(
        "bench", help="measure points/s, detection times vs the no-noise baseline, clean runs, "
        "plain code's steps/s",
        description="Benchmarks on this machine, printed as figures and ratios from one run.",
    )
    bench.add_argument("--trials", type=int, default=20, help="trials per racy variant (20)")
    bench.add_argument("--budget", type=float, default=5.0, metavar="S",
                       help="seconds per detection trial before it counts as missed (5)")
    bench.add_argument("--free-seconds", type=float, default=3.0, metavar="S",
                       help="seconds of the free-mode throughput run (3)")
    bench.add_argument("--clean-points", type=int, default=1_000_000, metavar="N",
                       help="points each correct variant must run clean (1000000)")
    bench.add_argument("--noise", type=float, default=DEFAULT_NOISE, metavar="P",
                       help=f"noise probability of the detection runs ({DEFAULT_NOISE})")
    bench.add_argument("--noise-policy", choices=NOISE_POLICIES, default=NoiseConfig().policy,
                       help="noise policy of the free-mode and clean runs (detection and rate "
                       f"measure every policy; default {NoiseConfig().policy})")
    bench.add_argument("--rate-seconds", type=float, default=3.0, metavar="S",
                       help="seconds of each steady-state rate run, with noise and without (3)")
    bench.add_argument("--seed", type=int, default=0, help="base seed (0)")
    bench.add_argument("--variant", action="append", help="racy variant(s) to time (all)")
    bench.add_argument("--section", action="append",
                       choices=BenchOptions.sections,
                       help="measure only these sections (repeatable; default all)")
    bench.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    bench.set_defaults(handler=_cmd_bench)


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
    unknown = [v for v in args.variant or () if v not in RACY_DRA]
    if unknown:
        problems.append(f"--variant {', '.join(unknown)}: the bench times the racy DRA "
                        f"variants {', '.join(RACY_DRA)}")
    if problems:
        raise ConfigError("; ".join(problems))
    if args.json:
        require_writable(Path(args.json), "the --json file")


def _cmd_bench(args: argparse.Namespace) -> int:
    _validate(args)
    options = BenchOptions(
        trials=args.trials, budget_s=args.budget, free_seconds=args.free_seconds,
        clean_points=args.clean_points, noise=args.noise, policy=args.noise_policy,
        seed=args.seed,
        rate_seconds=args.rate_seconds,
        variants=tuple(args.variant) if args.variant else None,
        sections=tuple(args.section) if args.section else BenchOptions.sections,
    )
    report = run_bench(options, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(render_bench(report))
    code = int(ExitCode.INTERRUPTED) if report.cut is not None else int(ExitCode.CLEAN)
    if args.json:
        try:
            write_text_atomically(Path(args.json), json.dumps(asdict(report), indent=2) + "\n",
                                  "the bench figures")
        except ArtifactError as exc:
            return verdict(code, [exc])
    return code
