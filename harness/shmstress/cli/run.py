"""``shmstress run``: one configuration, free or controlled, and the bundle of its failure."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from shmstress.cli import log as cli_log
from shmstress.cli.args import (
    key_value,
    no_repeats,
    noise_kinds,
    refuse_unless,
    strategy_from_args,
    track_given,
    with_examples,
)
from shmstress.cli.commands import add_command
from shmstress.controlled.options import (
    DEFAULT_EXECUTIONS,
    DEFAULT_MAX_STEPS,
    DEFAULT_RUN_STEPS,
    ControlledOptions,
)
from shmstress.controlled.result import ControlledResult
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import (
    DECLARED_MIX,
    DEFAULT,
    DEFAULT_MIX,
    EXPLORING,
    SPECS,
    SPIN_RULES,
    DporSpec,
    bound_words,
    mix_words,
)
from shmstress.core.config import (
    DEFAULT_HANG_TIMEOUT,
    DEFAULT_NOISE,
    DEFAULT_TAPE_SIZE,
    OUT_ENV,
    RunConfig,
    default_out,
)
from shmstress.core.database import DEFAULT_DIRECTORY, OFF, database_directory
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.files import ArtifactError, require_writable, write_text_atomically
from shmstress.core.noise import NOISE_KINDS, NOISE_POLICIES, NoiseConfig
from shmstress.core.result import RunResult
from shmstress.core.trace import step_number
from shmstress.free.learning import Learning
from shmstress.free.runner import run
from shmstress.plugin.wording import wording_by_name
from shmstress.render.commands import run_command
from shmstress.render.failure import failure_report
from shmstress.render.progress import RunProgress
from shmstress.render.summary import controlled_command, render_controlled, render_summary
from shmstress.repro.bundle import (
    Bundle,
    from_controlled,
    from_free_run,
    replay_command,
    tape_lost_note,
    write_bundle_into,
)

MODES = ("free", "controlled")
DEFAULT_TRACKER = "dra"
"""The tracker ``run`` and ``campaign`` stress when none is named: the DRA claim tracker."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(
        sub, "run",
        description="Fork the tracker's workers (one process per role instance) against its "
        "shared memory, inject noise at points (or, with --mode controlled, explore "
        "interleavings one worker at a time), check invariants online and at rest.",
        **with_examples(
            "shmstress run   # dra tracker, 10 s of free mode with noise",
            "shmstress run --variant fixed --duration 60   # a correct variant must stay clean",
            "shmstress run --mode controlled --seed 3   # one worker at a time, PCT",
            "shmstress run --tracker examples/counter_tracker.py:TicketTracker --workers clerk=4",
            "shmstress run --keep-going --json result.json --log run.log   # count every violation",
        ),
    )
    _add_run_options(parser)
    cli_log.add_run_log_options(parser)
    _add_controlled_options(parser)
    parser.add_argument("--json", metavar="PATH", help="also write the result as JSON (a "
                        "controlled run's failing_execution numbered as printed, from 1)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=_cmd_run)
    track_given(parser)


FREE_ONLY = ("--duration", "--noise", "--noise-kind", "--max-sleep-us", "--noise-policy",
             "--database", "--keep-going", "--max-violations", "--tape-size", "--drain-timeout",
             "--hang-timeout")
"""Options of free mode: a controlled run has no noise, no duration and stops at the first
failing execution."""
CONTROLLED_ONLY = ("--strategy", "--depth", "--spin", "--bound", "--executions", "--max-steps",
                   "--no-pin", "--require-coverage")


def validate_run_args(args: argparse.Namespace) -> None:
    """Usage errors of ``run`` that argparse cannot see, before anything starts."""
    cli_log.validate_log_options(args)
    if args.mode == "controlled":
        refuse_unless(args, FREE_ONLY, "in free mode (drop them, or --mode free)")
        strategy_from_args(args)
    else:
        refuse_unless(args, CONTROLLED_ONLY, "with --mode controlled")
    no_repeats("--workers", args.workers)
    no_repeats("--param", args.param)
    if args.check and len(set(args.check)) != len(args.check):
        twice = sorted({c for c in args.check if args.check.count(c) > 1})
        raise ConfigError(f"--check names {', '.join(twice)} twice; give each once")
    require_outputs(args)


def require_outputs(args: argparse.Namespace) -> None:
    """Every place the run may write must take a file, before any worker starts."""
    require_writable(Path(args.out), "the --out directory", directory=True)
    if getattr(args, "json", None):
        require_writable(Path(args.json), "the --json file")
    if getattr(args, "log", None):
        require_writable(Path(args.log), "the --log file")


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tracker", default=DEFAULT_TRACKER,
                        help="installed tracker name or path/to/file.py:ClassName "
                        f"(default: {DEFAULT_TRACKER})")
    parser.add_argument("--variant", help="tracker variant (default: the tracker's first; "
                        "see `shmstress list`)")
    scenario = parser.add_argument_group("workers and scenario (see `shmstress list`)")
    scenario.add_argument("--scenario", metavar="NAME",
                          help="start from one of the tracker's named scenarios (worker "
                          "counts and parameters); --workers and --param override it")
    scenario.add_argument("--workers", type=key_value, action="append", default=[],
                          metavar="ROLE=N", help="worker processes of a role (repeatable; "
                          "default: the tracker's count per role)")
    scenario.add_argument("--param", type=key_value, action="append", default=[],
                          metavar="NAME=VALUE", help="a tracker parameter (repeatable; "
                          "default: the tracker's)")
    budget = parser.add_argument_group("budget and noise")
    budget.add_argument("--duration", type=float, default=2.0, metavar="S",
                        help="seconds of churn before settling and checking at rest (default 2)")
    budget.add_argument("--points", type=int, metavar="N", dest="max_points",
                        help="stop churning after N points instead of (or before) --duration")
    budget.add_argument("--seed", type=int, help="seed for every random draw (default: random, "
                        "printed); exhaustive and dpor explore the same whatever it is: it "
                        "only seeds the workers' own draws, default 0")
    budget.add_argument("--noise", type=float, default=DEFAULT_NOISE, metavar="P",
                        help=f"probability of noise at each point (default {DEFAULT_NOISE}; "
                        "0 is the plain rerun-it baseline)")
    budget.add_argument("--noise-kind", type=noise_kinds, default=NOISE_KINDS, metavar="K[,K]",
                        help="noise kinds: yield, sleep (default both)")
    budget.add_argument("--noise-policy", choices=NOISE_POLICIES,
                        default=NoiseConfig().policy,
                        help="aimed: delay only at the locations of near-miss pairs, learnt "
                        "during the run, 3 x --noise being the rate at a fresh one, backing off "
                        "where delays produce nothing; uniform: every point with probability "
                        f"--noise (default {NoiseConfig().policy})")
    add_database_option(budget)
    budget.add_argument("--max-sleep-us", type=float, default=NoiseConfig().max_sleep_us,
                        metavar="US", help="longest injected sleep in microseconds (default 100)")
    budget.add_argument("--check", action="append", metavar="INVARIANT",
                        help="check only these invariants (repeatable; default all)")
    budget.add_argument("--keep-going", action="store_true",
                        help="count violations until the end instead of stopping at the first")
    budget.add_argument("--max-violations", type=int, default=64, metavar="N",
                        help="violations kept in detail with --keep-going (default 64)")
    budget.add_argument("--tape-size", type=int, default=DEFAULT_TAPE_SIZE, metavar="N",
                        help="points whose schedule is kept for replay; a failure past them "
                        f"is reported but cannot be replayed (default {DEFAULT_TAPE_SIZE})")
    budget.add_argument("--drain-timeout", type=float, default=5.0, metavar="S",
                        help="seconds allowed to settle before the stop (default 5)")
    budget.add_argument("--stop-timeout", type=float, default=10.0, metavar="S",
                        help="seconds workers get to stop before stacks are dumped (default "
                        "10; in controlled mode: to reach their next point)")
    budget.add_argument("--hang-timeout", type=float, default=DEFAULT_HANG_TIMEOUT,
                        metavar="S", help="a worker that finishes no step (reaches no new "
                        "point) for S seconds is reported hung with its stack, and the run "
                        f"ends with exit reason timeout (default {DEFAULT_HANG_TIMEOUT:g})")


def _add_controlled_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "controlled mode (one worker runs at a time; a strategy picks who)")
    group.add_argument("--mode", choices=MODES, default="free",
                       help="free: real parallelism with noise (default); controlled: "
                       "explore interleavings with --strategy, each one replayable")
    group.add_argument("--strategy", choices=EXPLORING, default=DEFAULT,
                       help="portfolio (default; for a tracker whose words declare what "
                       f"each step touches: {mix_words(DECLARED_MIX)}; for one that does not: "
                       f"{mix_words(DEFAULT_MIX)}), pct, random_walk, exhaustive (every "
                       "schedule within --bound; for small scenarios), or dpor (exhaustive "
                       "search over the orders of steps that conflict, where points say what "
                       "they touch)")
    group.add_argument("--depth", type=int, default=None, metavar="D",
                       help="with --strategy pct: bug depth, D-1 priority change points per "
                       "execution (default 3)")
    group.add_argument("--spin", choices=SPIN_RULES, default=None,
                       help="with --strategy pct: what a worker that yields (spins) does. "
                       "demote: it drops "
                       "below every other worker, as Shuttle's PCT (default; fastest, finds "
                       "the seed race in few executions); aside: it keeps its priority and "
                       "steps aside until another worker progresses (finds races that need a "
                       "spinner to see an update at once, e.g. dra events-unordered; several "
                       "times slower)")
    group.add_argument("--bound", type=int, default=None, metavar="B",
                       help="exhaustive search: every schedule with at most B preemptions "
                       "(switching away from a worker that could go on) and handovers after "
                       "a yield to any worker but the next in id order; switching after a "
                       "worker blocks or finishes is free (default 2); dpor: the same bound "
                       f"on its partial-order reduced search (default "
                       f"{bound_words(DporSpec.bound)}; -1: none)")
    group.add_argument("--executions", type=int, default=DEFAULT_EXECUTIONS, metavar="N",
                       help=f"executions to try; stops at the first failure "
                       f"({DEFAULT_EXECUTIONS}); --points sets the steps of churn of each "
                       f"({DEFAULT_RUN_STEPS}), and --duration is ignored")
    group.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, metavar="N",
                       help=f"an execution that has not finished after N steps ends with "
                       f"exit reason step-bound (default {DEFAULT_MAX_STEPS})")
    group.add_argument("--no-pin", action="store_true",
                       help="do not pin coordinator and workers to one CPU")
    group.add_argument("--require-coverage", action="store_true",
                       help="a clean run whose coverage was thin (no role ever yielded, every "
                       "execution cut at --max-steps, a bounded search cut short) exits 5")
    out = default_out()
    parser.add_argument("--out", default=out, metavar="DIR",
                        help=f"where a failing run writes its repro bundle and, beside it, "
                        f"its log (each under a name of its own) "
                        f"({out}; ${OUT_ENV} changes the default)")


def add_database_option(group: argparse._ActionsContainer) -> None:
    """``--database DIR``: where aimed noise's learning is kept (one option for every
    command that runs free mode, named as the pytest plugin's ``--stress-database``)."""
    group.add_argument("--database", metavar="DIR", default=DEFAULT_DIRECTORY,
                       help="with --noise-policy aimed, the near-miss pairs a run targeted and "
                       "their yield are saved under DIR/learning per tracker, variant and "
                       "scenario, and the next run of the same configuration starts from them "
                       f"(default {DEFAULT_DIRECTORY}, safe to delete; '{OFF}': start fresh "
                       "and save nothing)")


def learning_from_args(args: argparse.Namespace) -> Learning | None:
    """The learning ``--database`` names; None when it is off."""
    directory = database_directory(args.database)
    return Learning(directory) if directory is not None else None


def config_from_args(args: argparse.Namespace) -> RunConfig:
    return RunConfig(
        tracker=args.tracker,
        variant=args.variant,
        scenario=args.scenario,
        counts=no_repeats("--workers", args.workers),
        params=no_repeats("--param", args.param),
        duration=args.duration,
        max_points=args.max_points,
        seed=args.seed if args.seed is not None else 0 if (
            args.mode == "controlled"
            and SPECS[args.strategy].seedless) else None,
        noise=NoiseConfig(args.noise, args.noise_kind, args.max_sleep_us, args.noise_policy),
        stop_on_first=not args.keep_going,
        drain_timeout=args.drain_timeout,
        stop_timeout=args.stop_timeout,
        hang_timeout=args.hang_timeout,
        max_violations=args.max_violations,
        checks=tuple(args.check) if args.check else None,
        ring_size=args.ring_size,
        tape_size=args.tape_size,
    )


def _options_from_args(args: argparse.Namespace, config: RunConfig) -> ControlledOptions:
    return ControlledOptions(
        strategy=strategy_from_args(args),
        executions=args.executions,
        run_steps=config.max_points or DEFAULT_RUN_STEPS,
        max_steps=args.max_steps,
        pin=not args.no_pin,
    )


def _cmd_run(args: argparse.Namespace) -> int:
    validate_run_args(args)
    config = config_from_args(args)
    if args.mode == "controlled":
        return _run_controlled(args, config)
    with RunProgress(config.duration, enabled=not args.quiet) as progress:
        result = run(config, progress=progress.update, learning=learning_from_args(args))
    print(render_summary(result))
    bundle = from_free_run(result) if result.violation_count else None
    note = tape_lost_note(result) if bundle is not None else None
    unwritten = _report(args, result, bundle, run_command(result.config),
                        (f"{note} (raise --tape-size)",) if note else ())
    if args.json:
        unwritten += keep(lambda: write_json(Path(args.json), result_to_json(result)))
    return verdict(result.exit_code, unwritten)


def _run_controlled(args: argparse.Namespace, config: RunConfig) -> int:
    options = _options_from_args(args, config)
    result = run_controlled(replace(config, max_points=options.run_steps), options)
    print(render_controlled(result, args.require_coverage))
    unwritten = _report(args, result.run, from_controlled(result), controlled_command(result))
    if args.json:
        unwritten += keep(lambda: write_json(Path(args.json), _controlled_to_json(result)))
    code = result.exit_code
    if (args.require_coverage and code == ExitCode.CLEAN and result.coverage is not None
            and result.coverage.thin()):
        code = int(ExitCode.THIN_COVERAGE)
    return verdict(code, unwritten)


def keep(write: Callable[[], object]) -> list[ArtifactError]:
    """Run one artifact's ``write``; a failure (a full disk) is kept for ``verdict``."""
    try:
        write()
    except ArtifactError as exc:
        return [exc]
    return []


def verdict(code: int, unwritten: Sequence[ArtifactError]) -> int:
    """The command's exit code once its artifacts are written: what the run found (a
    violation is 1 whatever the disk says); one line on stderr for what could not be
    written, and exit 2 for it only when the run itself found nothing to report."""
    if not unwritten:
        return code
    print(f"shmstress: error: {'; '.join(map(str, unwritten))}", file=sys.stderr)
    return code if code != ExitCode.CLEAN else int(ExitCode.USAGE)


def _report(args: argparse.Namespace, result: RunResult, bundle: Bundle | None,
            rerun: str, notes: tuple[str, ...] = ()) -> list[ArtifactError]:
    """After the summary: the failure report, the logs written, the bundle and its replay.
    Returns what could not be written (a full disk): the rest is still written and shown."""
    wording = wording_by_name(result.config.tracker, result.config.params)
    unwritten: list[ArtifactError] = []
    path = None
    if bundle is not None:
        try:
            path = write_bundle_into(bundle, Path(args.out))
        except ArtifactError as exc:
            unwritten.append(exc)
    report = (failure_report(result, str(path) if path else None, rerun, wording, notes)
              if result.violation_count else None)
    lines, failed = cli_log.report_run_log(args, result, report, wording.words, bundle, path)
    unwritten += failed
    for line in lines:
        print(line)
    if path is not None and bundle is not None:
        print(f"  repro bundle: {path} ({len(bundle.steps):,} steps)")
        print("  replay it:")
        print(f"    {replay_command(path)}")
    return unwritten


def result_to_json(result: RunResult) -> dict[str, object]:
    data: dict[str, object] = asdict(result)
    data["violations"] = [  # at the point the summary prints ("at point N")
        {**asdict(found), "seq": None if found.seq is None else step_number(found.seq)}
        for found in result.violations]
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


def _controlled_to_json(result: ControlledResult) -> dict[str, object]:
    return {
        "mode": "controlled",
        "strategy": asdict(result.strategy),
        "executions": result.executions,
        "ends": dict(result.ends),
        "executions_per_s": result.executions_per_s,
        # numbered from 1, as the summary's "first failure: execution N" and the bundle
        "failing_execution": result.failing.index + 1 if result.failing else None,
        "coverage": None if result.coverage is None else {
            **asdict(result.coverage), "thin": list(result.coverage.thin())},
        "run": result_to_json(result.run),
    }


def write_json(path: Path, data: Any) -> None:
    """A command's ``--json`` file: written whole (``write_text_atomically``) or not at all."""
    write_text_atomically(path, json.dumps(data, indent=2, default=str) + "\n",
                          "the --json file")
