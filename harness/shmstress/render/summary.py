"""The text a user reads at the end of a run: a free run's summary, a controlled run's."""

from __future__ import annotations

import shlex

from shmstress.controlled.result import ControlledResult
from shmstress.core.plurals import rate
from shmstress.core.result import RunResult
from shmstress.core.trace import step_number
from shmstress.render.commands import run_command
from shmstress.render.coverage_text import coverage_lines


def _setup(counts: str, params: str) -> str:
    """``2 takers, 1 filler; size=4``: the parameters only when the tracker has some."""
    return f"{counts}; {params}" if params else counts


def render_summary(result: RunResult) -> str:
    config = result.config
    counts = ", ".join(f"{n} {role}{'s' if n != 1 else ''}" for role, n in config.counts.items())
    params = ", ".join(f"{k}={v}" for k, v in config.params.items())
    lines = [
        f"shmstress run: tracker {config.tracker}, variant {config.variant}, seed {config.seed}",
        f"  workers: {_setup(counts, params)}; noise p={config.noise.probability:g}"
        + (f" ({config.noise.policy})" if config.noise.probability else ""),
        f"  exit reason: {result.exit_reason.value} ({result.exit_reason.describe()})",
        f"  points: {result.points:,} in {result.elapsed_s:.2f} s "
        f"({rate(result.points_per_s, 'points')})",
    ]
    if result.startup_s is not None:
        lines.append(f"  start-up: every worker past its first step after {result.startup_s:.3f} s")
    if result.coverage is not None:
        lines.append(f"  interleaving coverage: {result.coverage} conflicting location pairs "
                     "(two workers, one object, each order counted)")
    aim = result.aim
    if aim is not None:
        learnt = f" ({aim.learnt_pairs} learnt by earlier runs)" if aim.learnt_pairs else ""
        lines.append(
            f"  aimed noise: targeted {aim.targeted_pairs} near-miss pairs{learnt} at "
            f"{aim.targeted_locations} locations; {aim.delays:,} delays, "
            f"{aim.productive_delays:,} of them let another worker in at a new order, "
            f"{aim.violation_delays:,} followed by a violation")
        lines += [f"  learning: {note}" for note in aim.notes]
    if result.drain_timed_out:
        lines.append("  note: the run did not settle within the drain timeout before the stop")
    for crash in result.crashes:
        lines.append("  " + crash.replace("\n", "\n    "))
    if result.violation_count:
        first = result.principal_violation
        shown = len(result.violations)
        lines.append(
            f"  violations: {result.violation_count}"
            + (f" (first {shown} kept)" if shown < result.violation_count else "")
        )
        if first is not None and first.elapsed_s is not None and first.seq is not None:
            after = result.first_after_startup_s
            since = "" if after is None else (
                f" ({after:.3f} s after start-up)" if after > 0 else " (during start-up)")
            lines.append(
                f"  first violation after {first.elapsed_s:.3f} s{since}, at point "
                f"{step_number(first.seq):,}"
            )
        for violation in result.violations[:10]:
            where = " at rest" if violation.at_rest else (
                f" [{violation.worker.describe()}]" if violation.worker else ""
            )
            lines.append(f"  - {violation.invariant}{where}: {violation.message}")
        if len(result.violations) > 10:
            lines.append(f"  ... and {len(result.violations) - 10} more")
        lines.append("  rerun with the same seed and options:")
        lines.append(f"    {run_command(config)}")
    else:
        lines.append("  violations: none")
    return "\n".join(lines)


def controlled_command(result: ControlledResult) -> str:
    """The command that reruns this exploration, execution for execution."""
    options = result.options
    args = ["--mode", "controlled", *result.strategy.options()]
    args += ["--executions", str(options.executions), "--max-steps", str(options.max_steps)]
    return run_command(result.run.config, free=False) + " " + shlex.join(args)


def render_controlled(result: ControlledResult, require_coverage: bool = False) -> str:
    run = result.run
    config = run.config
    counts = ", ".join(f"{n} {role}{'s' if n != 1 else ''}" for role, n in config.counts.items())
    params = ", ".join(f"{k}={v}" for k, v in config.params.items())
    ends = ", ".join(f"{n} {end}" for end, n in result.ends.items())
    pinned = f", pinned to CPU {result.pinned_cpu}" if result.pinned_cpu is not None else ""
    lines = [
        f"shmstress run (controlled): tracker {config.tracker}, variant {config.variant}, "
        # a seedless search at its default seed: a number would suggest a draw there is not
        + ("" if result.strategy.seedless and config.seed == 0 else f"seed {config.seed}, ")
        + f"strategy {result.strategy.describe()}",
        f"  workers: {_setup(counts, params)}; {result.options.run_steps} steps of churn per "
        f"execution, at most {result.options.max_steps}",
        f"  exit reason: {run.exit_reason.value} ({run.exit_reason.describe()})",
        f"  executions: {result.executions:,} ({ends or 'none'}) in {run.elapsed_s:.2f} s "
        f"({rate(result.executions_per_s, 'executions')}); {run.points:,} steps "
        f"({rate(result.steps_per_s, 'steps')}{pinned})",
    ]
    for crash in run.crashes:
        lines.append("  " + crash.replace("\n", "\n    "))
    failing = result.failing
    if failing is not None:
        outcome = failing.outcome
        lines.append(
            f"  first failure: execution {failing.index + 1} after {failing.found_after_s:.3f} s;"
            f" {len(outcome.steps):,} steps, {outcome.preemptions} preemption"
            f"{'s' if outcome.preemptions != 1 else ''}"
        )
        for violation in run.violations[:10]:
            where = " at rest" if violation.at_rest else (
                f" [{violation.worker.describe()}]" if violation.worker else "")
            lines.append(f"  - {violation.invariant}{where}: {violation.message}")
        if failing.reproduced is False:
            lines.append("  warning: the recorded re-run of this execution did not fail the same "
                         "way; the tracker may not be deterministic under replay")
    else:
        lines.append("  violations: none found" + (" (what the search covered is below)"
                                                  if result.coverage is not None else ""))
        if result.coverage is not None:
            lines.extend(coverage_lines(result.coverage, require_coverage))
    lines.append("  rerun this exploration:")
    lines.append(f"    {controlled_command(result)}")
    return "\n".join(lines)
