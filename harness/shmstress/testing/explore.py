"""A pytest helper: explore a tracker's interleavings, and fail with the story if one breaks.

    from shmstress.testing.explore import check_interleavings

    def test_claim_tracker_survives_pct() -> None:
        check_interleavings("dra", "fixed", strategy="pct", executions=200)

    def test_my_tracker() -> None:
        check_interleavings(MyTracker, "locked")  # the class itself, or "file.py:MyTracker"

On a failure the assertion message carries the violation, the explanation
rendered from the failing schedule and the command that replays its bundle,
so a red test says what went wrong and how to see it again.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

from shmstress.controlled.options import DEFAULT_MAX_STEPS, DEFAULT_RUN_STEPS, ControlledOptions
from shmstress.controlled.result import ControlledResult
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import DEFAULT, StrategySpec, spec_of
from shmstress.core.config import RunConfig, default_out
from shmstress.core.errors import ConcurrencyFailure
from shmstress.core.plurals import counted
from shmstress.render.failure import failure_report
from shmstress.render.summary import controlled_command
from shmstress.repro.bundle import from_controlled, replay_both_ways, write_bundle
from shmstress.testing.trackers import TrackerRef, tracker_spec

InterleavingFailure = ConcurrencyFailure
"""What a failing ``check_interleavings`` raised before there was one failure type."""


def explore(
    tracker: TrackerRef = "dra",
    variant: str | None = None,
    *,
    strategy: str | StrategySpec = DEFAULT,
    depth: int | None = None,
    spin: str | None = None,
    bound: int | None = None,
    executions: int = 100,
    seed: int = 0,
    counts: Mapping[str, int] | None = None,
    params: Mapping[str, int] | None = None,
    run_steps: int = DEFAULT_RUN_STEPS,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> ControlledResult:
    """Run a controlled exploration and return its result (no assertion).

    ``tracker`` is an installed tracker's name, ``path/to/file.py:Class`` or the class
    itself (defined at the top level of a file, so its bundle can load it again).
    """
    __tracebackhide__ = True  # a failing test's traceback ends in the test, not in here
    config = RunConfig(tracker=tracker_spec(tracker), variant=variant, counts=dict(counts or {}),
                       params=dict(params or {}), seed=seed, max_points=run_steps)
    options = ControlledOptions(
        strategy=spec_of(strategy, depth=depth, bound=bound, spin=spin),
        executions=executions, run_steps=run_steps, max_steps=max_steps,
    )
    return run_controlled(config, options)


def check_interleavings(
    tracker: TrackerRef = "dra",
    variant: str | None = None,
    *,
    strategy: str | StrategySpec = DEFAULT,
    depth: int | None = None,
    spin: str | None = None,
    bound: int | None = None,
    executions: int = 100,
    seed: int = 0,
    counts: Mapping[str, int] | None = None,
    params: Mapping[str, int] | None = None,
    run_steps: int = DEFAULT_RUN_STEPS,
    max_steps: int = DEFAULT_MAX_STEPS,
    out: Path | str | None = None,
) -> ControlledResult:
    """Explore ``tracker``'s interleavings and raise ``ConcurrencyFailure`` if one fails.

    Arguments are ``explore``'s: ``strategy`` (a name, "pct", "random_walk", "exhaustive",
    ..., with its ``depth``, ``bound`` or ``spin`` rule where given; or a spec such as
    ``PctSpec(depth=4)``), ``executions`` from ``seed``, ``counts`` of
    workers per role, tracker ``params``, ``run_steps`` per execution and ``max_steps``
    before one counts as hung. The failing execution's bundle is written to ``out``
    (default ``$SHMSTRESS_OUT`` or ``shmstress-out``) and the message carries the
    violation, its explanation and the replay command: a CI log keeps nothing else.
    Returns the result when every execution passed.
    """
    __tracebackhide__ = True
    result = explore(tracker, variant, strategy=strategy, depth=depth, spin=spin, bound=bound,
                     executions=executions, seed=seed, counts=counts, params=params,
                     run_steps=run_steps, max_steps=max_steps)
    if result.failing is None:
        return result
    raise ConcurrencyFailure(failure_message(result, Path(out or default_out())))


def failure_message(result: ControlledResult, out: Path) -> str:
    failing = result.failing
    assert failing is not None
    config = result.run.config
    lines = [
        f"{result.strategy.describe()} found a failing interleaving of "
        f"{config.tracker}/{config.variant} in execution {failing.index + 1} (seed "
        f"{config.seed}; {counted(len(failing.outcome.steps), 'step')}, "
        f"{counted(failing.outcome.preemptions, 'preemption')}):",
    ]
    for violation in result.run.violations[:3]:
        lines.append(f"  {violation.invariant}: {violation.message}")
    bundle = from_controlled(result)
    path = write_bundle(bundle, out) if bundle is not None else None
    report = failure_report(result.run, str(path) if path else None, controlled_command(result))
    if report.explanation:
        lines += ["explanation:", textwrap.indent(report.explanation, "  ")]
    if path is not None:
        lines += ["replay it:", *(f"  {command}" for command in replay_both_ways(path))]
    return "\n".join(lines)
