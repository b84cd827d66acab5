"""``shmstress check``: validate a tracker plugin before running it for real.

``run`` already refuses a malformed tracker, but only probes the variant it
runs for a few steps, for what free mode needs. ``check`` is the longer and
stricter look a plugin author wants while writing one: every variant, every
phase, many steps, and what controlled mode needs too: every step returns,
a step that goes on makes a point, and a few real controlled executions
under PCT (on purpose, not the default portfolio) finish within ``--max-steps``. The last
catches a role that spins without ``os.sched_yield()``: PCT keeps running
the highest-priority worker until it yields, so such a role starves the
worker it waits for and every execution hits the step bound.
"""

from __future__ import annotations

import argparse
import sys

from shmstress.cli.args import with_examples
from shmstress.cli.commands import add_command
from shmstress.cli.run import DEFAULT_TRACKER
from shmstress.controlled.execution import ExecutionEnd
from shmstress.controlled.options import DEFAULT_MAX_STEPS
from shmstress.controlled.result import ControlledResult
from shmstress.core.config import RunConfig
from shmstress.core.control import Phase
from shmstress.core.errors import ConfigError, PluginError
from shmstress.core.exit_reason import ExitReason
from shmstress.core.plurals import counted
from shmstress.plugin import registry
from shmstress.plugin.probe import ProbeReport, probe
from shmstress.plugin.resolve import resolve
from shmstress.plugin.tracker import Tracker
from shmstress.plugin.wording import wording_of
from shmstress.testing.explore import explore

_PHASES = (Phase.RUN, Phase.DRAIN, Phase.STOP)
CONTROLLED_EXECUTIONS = 5


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(
        sub, "check",
        description="Load a tracker, check its class, build each variant in a throwaway arena "
        "and step its roles one at a time, then run a few controlled executions under PCT: a "
        "malformed tracker fails with one line and exit code 2.",
        **with_examples(
            "shmstress check   # the built-in dra tracker",
            "shmstress check --tracker examples/counter_tracker.py:TicketTracker",
            "shmstress check --tracker my_tracker.py:MyTracker --executions 0   # probe only",
        ),
    )
    parser.add_argument("--tracker", default=DEFAULT_TRACKER,
                        help="installed tracker name or path/to/file.py:ClassName "
                        f"(default: {DEFAULT_TRACKER})")
    parser.add_argument("--variant", action="append",
                        help="variant(s) to probe (default: every variant)")
    parser.add_argument("--steps", type=int, default=200, metavar="N",
                        help="steps per worker and phase (default 200)")
    parser.add_argument("--executions", type=int, default=CONTROLLED_EXECUTIONS, metavar="N",
                        help=f"controlled PCT executions per variant that must finish within "
                        f"{DEFAULT_MAX_STEPS} steps ({CONTROLLED_EXECUTIONS}; 0 skips them)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the step order (default 0)")
    parser.set_defaults(handler=_cmd_check)


def _cmd_check(args: argparse.Namespace) -> int:
    problems = []
    if args.steps < 1:
        problems.append(f"--steps must be >= 1, got {args.steps}")
    if args.executions < 0:
        problems.append(f"--executions must be >= 0 (0 skips them), got {args.executions}")
    if args.seed < 0:
        problems.append(f"--seed must be >= 0, got {args.seed}")
    if problems:
        raise ConfigError("; ".join(problems))
    tracker_cls = registry.load(args.tracker)
    origin = f"tracker {args.tracker}"
    reports = []
    explored: dict[str, str] = {}
    for variant in args.variant or list(tracker_cls.variants):
        config = resolve(RunConfig(tracker=args.tracker, variant=variant, seed=args.seed),
                         tracker_cls)
        assert config.variant is not None
        reports.append(probe(
            tracker_cls, config.variant, config.params, config.counts,
            steps_per_worker=args.steps, phases=_PHASES, seed=args.seed, strict=True,
            origin=origin,
        ))
        if args.executions > 0:
            result = explore(args.tracker, config.variant, strategy="pct",
                             executions=args.executions, seed=args.seed)
            explored[config.variant] = controlled_verdict(result, origin, config.variant)
    print(render_check(args.tracker, reports, explored))
    unreached = unreached_labels(tracker_cls, reports)
    if unreached:
        print(f"shmstress: warning: the tracker's words name {len(unreached)} label(s) that no "
              f"probe step reached (misspelt, renamed, or reached only when workers race): "
              f"{', '.join(repr(label) for label in unreached)}", file=sys.stderr)
    return 0


def unreached_labels(tracker_cls: type[Tracker], reports: list[ProbeReport]) -> list[str]:
    """Labels the tracker's words know (with default parameters) that no probe reached."""
    reached = frozenset().union(*(report.labels for report in reports))
    return sorted(wording_of(tracker_cls, {}).words.labels() - reached)


def controlled_verdict(result: ControlledResult, origin: str, variant: str) -> str:
    """What the executions showed, or a PluginError when controlled mode cannot run the variant."""
    run = result.run
    if run.exit_reason is ExitReason.INTERRUPTED:
        raise KeyboardInterrupt
    where = f"{origin}: variant {variant!r}"
    if run.crashes:
        lines = [line.strip() for line in run.crashes[0].strip().splitlines() if line.strip()]
        raise PluginError(f"{where}: a worker failed in controlled mode: {lines[-1]}")
    bound = result.ends.get(ExecutionEnd.STEP_BOUND.value, 0)
    if bound:
        raise PluginError(
            f"{where}: {bound} of {result.executions} controlled PCT executions did not finish "
            f"within {result.options.max_steps} steps, though they could go on when every "
            "worker was given turns in order; a role that waits for another worker "
            "without os.sched_yield() keeps PCT running it: call os.sched_yield() and return "
            "True when a role has nothing to do (return runtime.idle())"
        )
    if result.failing is not None and run.exit_reason is ExitReason.NO_PROGRESS:
        # Not the tracker's form: the roles were given every turn and still nothing changed.
        return (f"PCT found an execution that cannot finish in execution "
                f"{result.failing.index + 1} (every role was given its turns and nothing "
                f"changed: a wait nobody ends, the variant's bug, not a role that waits "
                f"without yielding): {run.violations[0].message}")
    if result.failing is not None:
        return (f"PCT found a {run.exit_reason.value} in execution "
                f"{result.failing.index + 1}")
    return f"{result.executions} PCT executions finished"


def render_check(spec: str, reports: list[ProbeReport], explored: dict[str, str]) -> str:
    lines = [f"tracker {spec}: ok"]
    for report in reports:
        seen = (f"; {len(report.violations)} violation(s) in sequential steps (not races)"
                if report.violations else "")
        controlled = f"; {explored[report.variant]}" if report.variant in explored else ""
        lines.append(
            f"  {report.variant:22} {counted(report.workers, 'worker')}, "
            f"{counted(report.steps, 'step')}, {counted(report.points, 'point')}, "
            f"{counted(report.arrays, 'array')}, {counted(report.locks, 'lock')}{seen}"
            f"{controlled}"
        )
    return "\n".join(lines)
