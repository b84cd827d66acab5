"""The controlled-mode options of ``shmstress run``, and the bundle every failing run writes."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, replace
from pathlib import Path

from harness import cli_log
from harness.bundle import (
    Bundle,
    from_execution,
    from_free_run,
    replay_command,
    tape_lost_note,
    write_bundle,
)
from harness.config import RunConfig
from harness.controlled.options import (
    DEFAULT_EXECUTIONS,
    DEFAULT_MAX_STEPS,
    DEFAULT_RUN_STEPS,
    ControlledOptions,
)
from harness.controlled.result import ControlledResult
from harness.controlled.runner import run_controlled
from harness.controlled.summary import render_controlled
from harness.errors import ConfigError
from harness.result import RunResult
from harness.strategies import EXPLORING, SPIN_RULES, StrategySpec

OUT_ENV = "SHMSTRESS_OUT"  # overrides the default --out (the test suite points it at a tmp dir)
MODES = ("free", "controlled")


def add_run_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "controlled mode (one worker runs at a time; a strategy picks who)")
    group.add_argument("--mode", choices=MODES, default="free",
                       help="free: real parallelism with noise (default); controlled: "
                       "explore interleavings with --strategy, each one replayable")
    group.add_argument("--strategy", choices=EXPLORING, default="pct",
                       help="pct (default), random_walk, or exhaustive (every schedule "
                       "within --bound; for small scenarios)")
    group.add_argument("--depth", type=int, default=3, metavar="D",
                       help="PCT bug depth: D-1 priority change points per execution (3)")
    group.add_argument("--spin", choices=SPIN_RULES, default=StrategySpec.spin,
                       help="PCT: what a worker that yields (spins) does. demote: it drops "
                       "below every other worker, as Shuttle's PCT (default; fastest, finds "
                       "the seed race in few executions); aside: it keeps its priority and "
                       "steps aside until another worker progresses (finds races that need a "
                       "spinner to see an update at once, e.g. dra events-unordered; several "
                       "times slower)")
    group.add_argument("--bound", type=int, default=2, metavar="B",
                       help="exhaustive search: every schedule with at most B preemptions "
                       "(switching away from a worker that could go on) and handovers after "
                       "a yield to any worker but the next in id order; switching after a "
                       "worker blocks or finishes is free (2)")
    group.add_argument("--executions", type=int, default=DEFAULT_EXECUTIONS, metavar="N",
                       help=f"executions to try; stops at the first failure "
                       f"({DEFAULT_EXECUTIONS}); --points sets the steps of churn of each "
                       f"({DEFAULT_RUN_STEPS}), and --duration is ignored")
    group.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, metavar="N",
                       help=f"an execution that has not finished after N steps ends with "
                       f"exit reason step-bound ({DEFAULT_MAX_STEPS})")
    group.add_argument("--no-pin", action="store_true",
                       help="do not pin coordinator and workers to one CPU")
    out = default_out()
    parser.add_argument("--out", default=out, metavar="DIR",
                        help=f"where a failing run writes its repro bundle and run.log "
                        f"({out}; ${OUT_ENV} changes the default)")


def default_out() -> str:
    return os.environ.get(OUT_ENV, "shmstress-out")


def options_from_args(args: argparse.Namespace, config: RunConfig) -> ControlledOptions:
    return ControlledOptions(
        strategy=StrategySpec(args.strategy, depth=args.depth, bound=args.bound,
                              spin=args.spin),
        executions=args.executions,
        run_steps=config.max_points or DEFAULT_RUN_STEPS,
        max_steps=args.max_steps,
        pin=not args.no_pin,
    )


def cmd_run_controlled(args: argparse.Namespace, config: RunConfig) -> int:
    options = options_from_args(args, config)
    result = run_controlled(replace(config, max_points=options.run_steps), options)
    print(render_controlled(result))
    for line in cli_log.report_run_log(args, result.run):
        print(line)
    for line in bundle_lines(args, bundle_of_controlled(result)):
        print(line)
    if getattr(args, "json", None):
        _write_json(Path(args.json), result)
    return result.exit_code


def bundle_of_controlled(result: ControlledResult) -> Bundle | None:
    failing = result.failing
    if failing is None:
        return None
    outcome = failing.outcome
    return from_execution(
        result.run.config, result.strategy, failing.index, outcome.execution_seed,
        outcome.steps, outcome.phase_changes, result.run.violations, outcome.preemptions,
    )


def free_run_bundle_lines(args: argparse.Namespace, result: RunResult) -> list[str]:
    """After a free run: write its bundle if it failed, and say how to replay it."""
    if not result.violation_count:
        return []
    lines = bundle_lines(args, from_free_run(result))
    note = tape_lost_note(result)
    if lines and note:
        lines.append(f"  note: {note} (raise --tape-size)")
    return lines


def bundle_lines(args: argparse.Namespace, bundle: Bundle | None) -> list[str]:
    """Write the bundle into --out and say how to replay it (nothing if the run passed)."""
    if bundle is None:
        return []
    path = write_bundle(bundle, Path(args.out))
    return [f"  repro bundle: {path} ({len(bundle.steps):,} steps)", "  replay it:",
            f"    {replay_command(path)}"]


def _write_json(path: Path, result: ControlledResult) -> None:
    from harness.cli import result_to_json  # harness.cli imports this module

    data = {
        "mode": "controlled",
        "strategy": asdict(result.strategy),
        "executions": result.executions,
        "ends": dict(result.ends),
        "executions_per_s": result.executions_per_s,
        "failing_execution": result.failing.index if result.failing else None,
        "run": result_to_json(result.run),
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc}") from exc
