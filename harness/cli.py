"""The ``shmstress`` command line: argument parsing and exit codes, nothing else.

Every subcommand turns a ``ShmstressError`` into one line on stderr and its
exit code (2 for usage and configuration), so no user ever sees a traceback
for a mistake of theirs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import NoReturn, cast

from harness import cli_log, registry
from harness.bench import BenchOptions
from harness.config import DEFAULT_NOISE, RunConfig
from harness.controlled import cli as controlled_cli
from harness.errors import ConfigError, ShmstressError
from harness.exit_reason import ExitReason
from harness.noise import NOISE_KINDS, NoiseConfig
from harness.progress import RunProgress
from harness.result import RunResult
from harness.runner import run
from harness.shm import sweep_stale_segments
from harness.summary import render_summary

_EPILOG = """\
exit codes: 0 clean, 1 invariant violation (or deadlock) found, 2 usage or configuration
error, 3 a replay diverged, 4 a worker crashed or hung, 130 interrupted.
"""


class _OneLineErrors(argparse.ArgumentParser):
    """argparse prints the whole usage block before a mistake; we print the mistake alone."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def key_value(text: str) -> tuple[str, int]:
    """argparse type of ``NAME=INTEGER`` options (--param, --workers)."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=INTEGER, got {text!r}")
    try:
        return name, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name}: {value!r} is not an integer") from None


def _kinds(text: str) -> tuple[str, ...]:
    return tuple(k.strip() for k in text.split(",") if k.strip())


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tracker", default="dra",
                        help="installed tracker name or path/to/file.py:ClassName (default: dra)")
    parser.add_argument("--variant", help="tracker variant (default: the tracker's first; "
                        "see `shmstress list`)")
    roles = parser.add_argument_group("workers (one OS process each)")
    roles.add_argument("--binders", type=int, metavar="N", help="binder processes (dra: 2)")
    roles.add_argument("--informers", type=int, metavar="N", help="informer processes (dra: 1)")
    roles.add_argument("--gatherers", type=int, metavar="N", help="gatherer processes (dra: 1)")
    roles.add_argument("--workers", type=key_value, action="append", default=[],
                       metavar="ROLE=N", help="worker count for any role of any tracker")
    scenario = parser.add_argument_group("scenario")
    scenario.add_argument("--nodes", type=int, metavar="N", help="dra: nodes (default 2)")
    scenario.add_argument("--devices-per-node", type=int, metavar="N",
                          help="dra: devices per node, one claim per device (default 4)")
    scenario.add_argument("--param", type=key_value, action="append", default=[],
                          metavar="NAME=VALUE", help="any tracker parameter (see `shmstress list`)")
    budget = parser.add_argument_group("budget and noise")
    budget.add_argument("--duration", type=float, default=2.0, metavar="S",
                        help="seconds of churn before settling and checking at rest (default 2)")
    budget.add_argument("--points", type=int, metavar="N", dest="max_points",
                        help="stop churning after N points instead of (or before) --duration")
    budget.add_argument("--seed", type=int, help="seed for every random draw (default: random, "
                        "printed)")
    budget.add_argument("--noise", type=float, default=DEFAULT_NOISE, metavar="P",
                        help=f"probability of noise at each point (default {DEFAULT_NOISE}; "
                        "0 is the plain rerun-it baseline)")
    budget.add_argument("--noise-kind", type=_kinds, default=NOISE_KINDS, metavar="K[,K]",
                        help="noise kinds: yield, sleep (default both)")
    budget.add_argument("--max-sleep-us", type=float, default=NoiseConfig().max_sleep_us,
                        metavar="US", help="longest injected sleep in microseconds (default 100)")
    budget.add_argument("--check", action="append", metavar="INVARIANT",
                        help="check only these invariants (repeatable; default all)")
    budget.add_argument("--keep-going", action="store_true",
                        help="count violations until the end instead of stopping at the first")
    budget.add_argument("--max-violations", type=int, default=64, metavar="N",
                        help="violations kept in detail with --keep-going (default 64)")
    budget.add_argument("--tape-size", type=int, default=RunConfig().tape_size, metavar="N",
                        help="points whose schedule is kept for replay; a failure past them "
                        f"is reported but cannot be replayed (default {RunConfig().tape_size})")
    budget.add_argument("--drain-timeout", type=float, default=5.0, metavar="S",
                        help="seconds allowed to settle before the stop (default 5)")
    budget.add_argument("--stop-timeout", type=float, default=10.0, metavar="S",
                        help="seconds workers get to stop before stacks are dumped (default 10)")


def config_from_args(args: argparse.Namespace) -> RunConfig:
    counts = dict(args.workers)
    for role in ("binder", "informer", "gatherer"):
        value = getattr(args, f"{role}s")
        if value is not None:
            counts[role] = value
    params = dict(args.param)
    if args.nodes is not None:
        params["nodes"] = args.nodes
    if args.devices_per_node is not None:
        params["devices-per-node"] = args.devices_per_node
    return RunConfig(
        tracker=args.tracker,
        variant=args.variant,
        counts=counts,
        params=params,
        duration=args.duration,
        max_points=args.max_points,
        seed=args.seed,
        noise=NoiseConfig(args.noise, args.noise_kind, args.max_sleep_us),
        stop_on_first=not args.keep_going,
        drain_timeout=args.drain_timeout,
        stop_timeout=args.stop_timeout,
        max_violations=args.max_violations,
        checks=tuple(args.check) if args.check else None,
        ring_size=args.ring_size,
        tape_size=args.tape_size,
    )


def _cmd_run(args: argparse.Namespace) -> int:
    cli_log.check_run_log_options(args)
    config = config_from_args(args)
    if args.mode == "controlled":
        return controlled_cli.cmd_run_controlled(args, config)
    with RunProgress(config.duration, enabled=not args.quiet) as progress:
        result = run(config, progress=progress.update)
    print(render_summary(result))
    for line in cli_log.report_run_log(args, result):
        print(line)
    for line in controlled_cli.free_run_bundle_lines(args, result):
        print(line)
    if args.json:
        _write_json(Path(args.json), result_to_json(result))
    return result.exit_code


def result_to_json(result: RunResult) -> dict[str, object]:
    data: dict[str, object] = asdict(result)
    if result.recording is not None:  # every record would make the JSON huge: counts only
        recording = result.recording
        data["recording"] = {
            "records": len(recording.records), "logs": len(recording.logs),
            "ring_lost": recording.ring_lost, "steps": len(recording.steps),
            "tape_lost": recording.tape_lost,
        }
    data["exit_reason"] = result.exit_reason.value
    data["points_per_s"] = result.points_per_s
    return data


def _write_json(path: Path, data: object) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc}") from exc


def _cmd_list(args: argparse.Namespace) -> int:
    for name in sorted(registry.available()):
        tracker = registry.load(name)
        print(f"{name}: {tracker.summary}")
        print("  variants:")
        for variant, text in tracker.variants.items():
            print(f"    {variant:18} {text}")
        print("  roles (default count):")
        for role, text in tracker.roles.items():
            print(f"    {role:18} ({tracker.default_counts.get(role, 1)}) {text}")
        print("  parameters (default):")
        for pname, param in tracker.parameters.items():
            print(f"    {pname:18} ({param.default}) {param.help}")
        print("  invariants:")
        for invariant in tracker.invariants:
            print(f"    {invariant.name:22} {invariant.summary}")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    removed = sweep_stale_segments()
    listed = ": " + ", ".join(removed) if removed else ""
    print(f"removed {len(removed)} stale segment(s){listed}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from harness.bench import render_bench, run_bench

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
        _write_json(Path(args.json), asdict(report))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineErrors(
        prog="shmstress",
        description="Stress a shared-memory tracker with worker processes and check invariants.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # Subcommand parsers are _OneLineErrors too (argparse uses the parent's class);
    # the registrars in other modules need only the ArgumentParser interface.
    sub = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
    )

    run_parser = sub.add_parser(
        "run", help="run one configuration and report violations",
        description="Fork binders, informers and gatherers against a tracker in shared memory, "
        "inject noise at points, check invariants online and at rest.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_run_options(run_parser)
    cli_log.add_run_log_options(run_parser)
    controlled_cli.add_run_options(run_parser)
    run_parser.add_argument("--json", metavar="PATH", help="also write the result as JSON")
    run_parser.add_argument("--quiet", action="store_true", help="no progress bar")
    run_parser.set_defaults(handler=_cmd_run)

    list_parser = sub.add_parser("list", help="list trackers, variants, roles and invariants")
    list_parser.set_defaults(handler=_cmd_list)

    sweep_parser = sub.add_parser("sweep", help="unlink segments left by dead coordinators")
    sweep_parser.set_defaults(handler=_cmd_sweep)

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
    for register in _registrars():
        register(sub)
    return parser


Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def _registrars() -> list[Registrar]:
    """Subcommands that live in modules of their own; each adds its parser and handler."""
    from harness import cli_campaign, cli_check, cli_replay

    return [cli_campaign.register, cli_check.register, cli_log.register, cli_replay.register]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except ShmstressError as exc:
        print(f"shmstress: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("shmstress: interrupted", file=sys.stderr)
        return ExitReason.INTERRUPTED.exit_code
    return code


if __name__ == "__main__":
    sys.exit(main())
