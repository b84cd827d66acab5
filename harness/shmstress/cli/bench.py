"""``shmstress bench``: the benchmark figures of this machine, as ratios from one run."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from shmstress.bench.suite import BenchOptions, render_bench, run_bench
from shmstress.core.config import DEFAULT_NOISE
from shmstress.core.files import write_text_atomically


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser(
        "bench", help="measure points/s, detection times vs the no-noise baseline, clean runs",
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
    bench.add_argument("--rate-seconds", type=float, default=3.0, metavar="S",
                       help="seconds of each steady-state rate run, with noise and without (3)")
    bench.add_argument("--seed", type=int, default=0, help="base seed (0)")
    bench.add_argument("--variant", action="append", help="racy variant(s) to time (all)")
    bench.add_argument("--section", action="append",
                       choices=BenchOptions.sections,
                       help="measure only these sections (repeatable; default all)")
    bench.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    bench.set_defaults(handler=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    options = BenchOptions(
        trials=args.trials, budget_s=args.budget, free_seconds=args.free_seconds,
        clean_points=args.clean_points, noise=args.noise, seed=args.seed,
        rate_seconds=args.rate_seconds,
        variants=tuple(args.variant) if args.variant else None,
        sections=tuple(args.section) if args.section else BenchOptions.sections,
    )
    report = run_bench(options, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(render_bench(report))
    if args.json:
        write_text_atomically(Path(args.json), json.dumps(asdict(report), indent=2) + "\n")
    return 0
