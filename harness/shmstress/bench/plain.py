"""Plain-code figures for ``shmstress bench``, each next to its baseline from the same run.

- steps/s of controlled executions of plain multiprocessing code with tracing and the
  self-check each off and on (both on is what ``shmstress test`` does by default),
  against the raw two-semaphore ping-pong of ``bench.controlled`` (a
  step costs at least one handoff there and back: process -> coordinator ->
  process). The scenario takes about a thousand steps per execution, so the
  figure is the cost of a step, not of forking each execution's processes;
- executions/s of the two-increment locked counter, where the forks are the cost, in
  the same four settings;
- what one more process costs an execution (processes that do nothing, ``FEW`` then
  ``MANY`` of them, as ``shmstress test`` runs them), next to a bare ``os.fork`` +
  ``os._exit`` + ``waitpid`` from the bench's own process, pinned as the sessions are,
  measured before and after them;
- executions until the first failure of the lost update on a counter: shmstress
  (processes, PCT) next to Frontrun (threads, its default DPOR and its random
  strategy), over the same number of seeds, and the ratio of their median wall times.
  Frontrun is not a dependency: it is measured when it is installed, and said to be
  missing when it is not.

The scenarios run from a copy of ``scenarios_plain.py`` in a temporary folder:
``--trace`` leaves code inside the shmstress package alone, so traced in place
the file would cost only the trace hook's calls, not its opcodes.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from shmstress.bench.controlled import Throughput, pingpong
from shmstress.bench.scenarios_plain import FEW, MANY
from shmstress.controlled.pinning import pinned
from shmstress.controlled.strategies import PctSpec
from shmstress.core.errors import ScenarioError
from shmstress.core.signals import interruptible
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec

SCENARIOS = Path(__file__).with_name("scenarios_plain.py")
SCENARIOS_MODULE = "shmstress.bench.scenarios_plain"
STEPS_SCENARIO = "locked_many"
COUNTER_SCENARIO = "locked"
RACY_SCENARIO = "racy"
FEW_SCENARIO, MANY_SCENARIO = "started_few", "started_many"
PCT = PctSpec()
FRONTRUN_VERSION = "0.7.0"
FRONTRUN_MISSING = f"frontrun not installed (pip install frontrun=={FRONTRUN_VERSION})"
FRONTRUN_STRATEGIES = ("dpor", "random")
"""Frontrun's default strategy, then its random one (the only one that takes a seed)."""


@dataclass(frozen=True)
class Setting:
    """Tracing (of the scenario's file, as the default traces its project) and the
    self-check, each on or off."""

    traced: bool
    checked: bool

    def describe(self) -> str:
        return (f"trace {'on' if self.traced else 'off'}, "
                f"self-check {'on' if self.checked else 'off'}")


SETTINGS = (Setting(False, False), Setting(True, False), Setting(False, True),
            Setting(True, True))
"""Both off first; both on, ``shmstress test``'s default, last."""


@dataclass(frozen=True)
class PlainBudgets:
    """How much of each figure to measure: the defaults for the bench, tiny ones for tests."""

    pingpong_round_trips: int = 50_000
    step_executions: int = 30  # of STEPS_SCENARIO, in each setting
    counter_executions: int = 300  # in each setting
    process_executions: int = 100  # of FEW_SCENARIO and of MANY_SCENARIO
    bare_forks: int = 300  # before and after them
    trials: int = 10  # seeds of the first-failure comparison, per tool and strategy
    detection_budget: int = 1000  # executions per trial before it counts as missed


@dataclass(frozen=True)
class FirstFailures:
    """Executions until the first failure over trials (seeds) of one tool and strategy.

    A trial that found nothing counts as the budget, so the median and the max
    are lower bounds once a trial missed; its seconds are those of the whole
    budget.
    """

    tool: str
    strategy: str
    budget: int
    found: int
    executions: tuple[int, ...]  # per trial: until the first failure, or the budget
    seconds: tuple[float, ...]  # per trial: wall time of the exploration

    @property
    def trials(self) -> int:
        return len(self.executions)

    @property
    def median_executions(self) -> float:
        return float(statistics.median(self.executions)) if self.executions else 0.0

    @property
    def max_executions(self) -> int:
        return max(self.executions, default=0)

    @property
    def median_s(self) -> float:
        return float(statistics.median(self.seconds)) if self.seconds else 0.0

    @property
    def max_s(self) -> float:
        return max(self.seconds, default=0.0)


@dataclass(frozen=True)
class FrontrunFigures:
    version: str
    strategies: tuple[FirstFailures, ...]
    explanation: tuple[str, ...]  # Frontrun's own words on its first failure, first lines


@dataclass(frozen=True)
class ProcessCost:
    """What one more process costs an execution, and a bare fork from the bench's process."""

    few: Throughput  # FEW_SCENARIO: FEW processes started and joined
    many: Throughput  # MANY_SCENARIO
    bare_fork_s: float  # median fork + exit + wait, the mean of before and after

    @property
    def per_process_s(self) -> float:
        """The difference of the two scenarios' seconds per execution over MANY - FEW."""
        few, many = self.few.executions_per_s, self.many.executions_per_s
        if few <= 0 or many <= 0:
            return 0.0
        return (1 / many - 1 / few) / (MANY - FEW)

    @property
    def bare_forks(self) -> float:
        """One more process in bare forks."""
        return self.per_process_s / self.bare_fork_s if self.bare_fork_s > 0 else 0.0


@dataclass(frozen=True)
class PlainBench:
    pingpong_round_trips_per_s: float
    steps: tuple[Throughput, ...]  # STEPS_SCENARIO in each of SETTINGS
    counters: tuple[Throughput, ...]  # COUNTER_SCENARIO in each of SETTINGS
    shmstress: FirstFailures
    frontrun: FrontrunFigures | None
    frontrun_missing: str = ""  # why there is no Frontrun figure
    processes: ProcessCost | None = None

    def share(self, throughput: Throughput) -> float:
        """Steps/s in percent of the ping-pong's round trips/s."""
        rate = self.pingpong_round_trips_per_s
        return 100.0 * throughput.steps_per_s / rate if rate > 0 else 0.0


@contextlib.contextmanager
def scenario_copy() -> Iterator[Path]:
    """The bench scenarios as a file outside the shmstress package (``--trace`` skips the
    package's own code), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="shmstress-bench-") as folder:
        copy = Path(folder) / SCENARIOS.name
        shutil.copyfile(SCENARIOS, copy)
        yield copy


def _explore(scenario: Path, function: str, executions: int, seed: int,
             setting: Setting = SETTINGS[-1]) -> PlainResult:
    spec = PlainSpec(ScenarioRef(str(scenario), function),
                     trace=(str(scenario),) if setting.traced else (),
                     self_check=setting.checked)
    return explore(spec, Exploration(PCT, seed, executions))


def plain_throughput(scenario: Path, function: str, executions: int, seed: int,
                     setting: Setting = SETTINGS[-1]) -> Throughput:
    """Steps and executions over the exploration's wall time, session start-up included
    (it is what a user waits for; a few executions' worth of steps amortise it)."""
    result = _explore(scenario, function, executions, seed, setting)
    if result.failing is not None:  # a clean scenario: any failure is the bench's own bug
        failure = result.failing.failure
        raise ScenarioError(f"bench scenario {function} failed in execution "
                            f"{result.failing_index + 1}: "
                            f"{failure.message if failure else result.failing.end.value}")
    if result.uncontrolled:  # the bench scenarios are all under control
        raise ScenarioError(f"bench scenario {function} is not under control: "
                            f"{next(iter(result.uncontrolled))}")
    what = f"{function}, {setting.describe()}"
    return Throughput(what, result.executions, result.steps, result.elapsed_s)


def bare_fork_s(forks: int) -> float:
    """The median seconds of ``os.fork`` + ``os._exit(0)`` in the child + ``waitpid``, from
    this process, pinned to one CPU as a session's processes are: the floor of what a
    process of an execution costs."""
    times = []
    with pinned():
        for _ in range(forks):
            start = time.perf_counter()
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
            times.append(time.perf_counter() - start)
    return float(statistics.median(times)) if times else 0.0


def process_cost(scenario: Path, budgets: PlainBudgets, seed: int) -> ProcessCost:
    """One more process, in the setting ``shmstress test`` runs by default, between two
    measures of a bare fork (a machine getting busier weighs on both sides alike)."""
    before = bare_fork_s(budgets.bare_forks)
    few = plain_throughput(scenario, FEW_SCENARIO, budgets.process_executions, seed)
    many = plain_throughput(scenario, MANY_SCENARIO, budgets.process_executions, seed)
    after = bare_fork_s(budgets.bare_forks)
    return ProcessCost(few, many, (before + after) / 2)


def shmstress_first_failures(scenario: Path, trials: int, budget: int,
                             seed: int) -> FirstFailures:
    """The lost update on a ``Value`` between two processes, PCT, one seed per trial."""
    executions = []
    seconds = []
    found = 0
    for trial in range(trials):
        result = _explore(scenario, RACY_SCENARIO, budget, seed + trial)
        if result.failing is not None and result.failing.failed:
            found += 1
            executions.append(result.failing_index + 1)
        else:
            executions.append(budget)
        seconds.append(result.elapsed_s)
    return FirstFailures("shmstress (2 processes)", PCT.describe(), budget, found,
                         tuple(executions), tuple(seconds))


def frontrun_first_failures(trials: int, budget: int, seed: int) -> FrontrunFigures | None:
    """The lost update on an attribute between two threads, under Frontrun's ``explore``;
    None when Frontrun is not installed.

    Frontrun's counterexample replays (``reproduce_on_failure``) are turned off, so
    that its wall time, like shmstress's, is the search alone. Its DPOR takes no
    seed and is deterministic: its trials differ in wall time only. One exploration
    per strategy runs first, untimed, so that Frontrun's lazy imports are not a
    trial's cost (shmstress's are paid by the earlier figures).
    """
    if importlib.util.find_spec("frontrun") is None:
        return None
    frontrun = importlib.import_module("frontrun")
    cooperative = importlib.import_module("frontrun._cooperative")
    scenarios = importlib.import_module(SCENARIOS_MODULE)
    counter: type[Any] = scenarios.ThreadCounter
    importlib.import_module("multiprocessing.resource_tracker")  # its lock: a real one
    # Frontrun refuses to explore unless its cooperative locks are in; they stay in only
    # for these explorations (the patch is counted: one already in is left in).
    cooperative.patch_locks()
    try:
        strategies = []
        explanation: tuple[str, ...] = ()
        for strategy in FRONTRUN_STRATEGIES:
            _frontrun_explore(frontrun, counter, strategy, budget, seed)  # warm-up
            executions = []
            seconds = []
            found = 0
            for trial in range(trials):
                start = time.perf_counter()
                result = _frontrun_explore(frontrun, counter, strategy, budget, seed + trial)
                seconds.append(time.perf_counter() - start)
                if result.property_holds is False:
                    found += 1
                    executions.append(int(result.num_explored))
                    if not explanation:
                        explanation = _first_lines(result.explanation)
                else:
                    executions.append(budget)
            strategies.append(FirstFailures("frontrun (2 threads)", strategy, budget, found,
                                            tuple(executions), tuple(seconds)))
    finally:
        cooperative.unpatch_locks()
    return FrontrunFigures(importlib.metadata.version("frontrun"), tuple(strategies),
                           explanation)


def _frontrun_explore(frontrun: ModuleType, counter: type[Any], strategy: str, budget: int,
                      seed: int) -> Any:
    limits: dict[str, Any] = (
        {"max_executions": budget} if strategy == "dpor"
        else {"max_attempts": budget, "seed": seed}
    )
    return frontrun.explore(
        setup=counter, workers=counter.increment, count=2,
        invariant=lambda c: c.value == 2, strategy=strategy, reproduce_on_failure=0,
        trace_packages=[SCENARIOS_MODULE],  # traced even from an installed shmstress
        **limits,
    )


def _first_lines(text: str | None, count: int = 2) -> tuple[str, ...]:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return tuple(lines[:count])


def run_plain_bench(seed: int, log: Callable[[str], None],
                    budgets: PlainBudgets = PlainBudgets()) -> PlainBench:
    """Every plain-code figure; the ping-pong is measured before and after the step rates
    and averaged, so that a machine getting busier weighs on both sides alike."""
    with interruptible(), scenario_copy() as scenario:
        log("plain: raw two-semaphore ping-pong, pinned to one CPU")
        pingpong_rate = pingpong(budgets.pingpong_round_trips)
        log(f"plain: steps/s, {STEPS_SCENARIO}, tracing and the self-check off and on")
        steps = tuple(plain_throughput(scenario, STEPS_SCENARIO, budgets.step_executions,
                                       seed, setting) for setting in SETTINGS)
        pingpong_rate = (pingpong_rate + pingpong(budgets.pingpong_round_trips)) / 2
        log(f"plain: executions/s, {COUNTER_SCENARIO} counter, in the same settings")
        counters = tuple(plain_throughput(scenario, COUNTER_SCENARIO,
                                          budgets.counter_executions, seed, setting)
                         for setting in SETTINGS)
        log(f"plain: one more process ({FEW} then {MANY} that do nothing), next to a bare "
            "fork")
        processes = process_cost(scenario, budgets, seed)
        log(f"plain: executions until the first failure, {RACY_SCENARIO} counter, "
            f"{budgets.trials} seeds")
        ours = shmstress_first_failures(scenario, budgets.trials, budgets.detection_budget,
                                        seed)
        log("plain: the same race with threads under Frontrun")
        theirs = frontrun_first_failures(budgets.trials, budgets.detection_budget, seed)
    return PlainBench(pingpong_rate, steps, counters, ours, theirs,
                      FRONTRUN_MISSING if theirs is None else "", processes)


def render_plain_bench(bench: PlainBench) -> list[str]:
    rate = bench.pingpong_round_trips_per_s
    lines = [
        "plain multiprocessing code (controlled, every process pinned to one CPU):",
        f"  raw two-semaphore ping-pong (pinned to one CPU): {rate:,.0f} round trips/s",
    ]
    bare = bench.steps[0].steps_per_s
    for t in bench.steps:
        lines.append(
            f"  {t.what:52} {t.steps_per_s:>9,.0f} steps/s ({bench.share(t):.0f}% of the "
            f"ping-pong, {t.steps_per_s / bare if bare else 0:.0%} of both off), "
            f"{t.steps / max(1, t.executions):,.0f} steps per execution, "
            f"{t.executions} executions in {t.seconds:.2f} s"
        )
    bare = bench.counters[0].executions_per_s
    for c in bench.counters:
        lines.append(
            f"  {c.what:52} {c.executions_per_s:>9,.1f} executions/s "
            f"({c.executions_per_s / bare if bare else 0:.0%} of both off; {c.executions} "
            f"executions, {c.steps / max(1, c.executions):.0f} steps each, start-up included)"
        )
    if bench.processes is not None:
        lines.extend(_render_process_cost(bench.processes))
    lines.append("  lost update on a counter, executions until the first failure over seeds "
                 "(a miss counts as the budget):")
    rows = [bench.shmstress, *(bench.frontrun.strategies if bench.frontrun else ())]
    lines.extend(_render_first_failures(f) for f in rows)
    if bench.frontrun is None:
        lines.append(f"    {bench.frontrun_missing}")
    else:
        lines.append(f"    frontrun {bench.frontrun.version}: counterexample replays off; its "
                     f"DPOR takes no seed (trials differ in time only)")
        ours = bench.shmstress.median_s
        ratios = ", ".join(f"{ours / f.median_s:,.1f}x its {f.strategy}"
                           for f in bench.frontrun.strategies if f.median_s > 0)
        lines.append(f"    shmstress's median wall time to the first failure: {ratios}")
        if bench.frontrun.explanation:
            lines.append(f"    frontrun says: {' / '.join(bench.frontrun.explanation)}")
    return lines


def _render_process_cost(cost: ProcessCost) -> list[str]:
    few, many = cost.few, cost.many
    return [
        f"  one more process (each does nothing; {few.what.partition(', ')[2]}): "
        f"{cost.per_process_s * 1000:,.2f} ms = {cost.bare_forks:.2f} bare forks "
        f"({FEW} processes: {few.executions_per_s:,.1f} executions/s, {MANY}: "
        f"{many.executions_per_s:,.1f}; {few.executions} executions each, start-up included)",
        f"  bare os.fork + os._exit + waitpid from the bench's process, pinned to one CPU: "
        f"median {cost.bare_fork_s * 1000:,.3f} ms (before and after)",
    ]


def _render_first_failures(f: FirstFailures) -> str:
    return (f"    {f.tool:24} {f.strategy:16} found {f.found}/{f.trials}, executions median "
            f"{f.median_executions:,.1f} max {f.max_executions:,} (budget {f.budget}); wall "
            f"median {f.median_s * 1000:,.1f} ms max {f.max_s * 1000:,.1f} ms")
