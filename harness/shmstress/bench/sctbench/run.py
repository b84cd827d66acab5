"""``shmstress bench --suite sctbench``: the ported SCTBench programs under every strategy.

Per buggy program and strategy: whether a failure was found within the budget of
executions (the paper's limit is 100,000 schedules), and the executions and wall
time to the first failure, median over seeds. The strategies are the default
(``portfolio``: its members take turns, execution by execution), PCT at depth 1,
2 and 3, random walk, bounded exhaustive
search at preemption bounds 0 to 3, DPOR (``controlled/strategies/dpor.py``, seedless
like exhaustive search), and free mode with noise (the OS schedules,
noise perturbs; not a strategy's choice, so not reproducible by seed, but every
failure it finds replays). Exhaustive search does not depend
on the seed (it enumerates the same schedules in the same order), so it runs once
per program, not once per seed; a search that ran out of schedules without a
failure says so (the bug needs more preemptions than its bound). Each twin then
runs its budget under the default, PCT and random walk, and must run clean (the
``din_phil*_unsat`` twins may only deadlock, as their C code can).

The issue's done-when checks are printed under the table (``DefaultCheck``): the
default's summed median executions against every single controlled strategy's
sum, and per program the default's median over the best single strategy's
(flagged above ``RATIO_LIMIT``).

A trial that misses counts as the whole budget in the medians, which are then
lower bounds (printed with ``>=``). Figures are printed beside the paper's
headline; the paper counts schedules, and ports count executions: one execution
is one schedule.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from shmstress.bench.pool import run_pool
from shmstress.bench.sctbench.checkpoints import SuiteDirectory
from shmstress.bench.sctbench.programs import BUGGY, Program, program
from shmstress.controlled.strategies import (
    DEFAULT,
    DporSpec,
    ExhaustiveSpec,
    PctSpec,
    RandomWalkSpec,
    spec_named,
)
from shmstress.controlled.strategies.base import StrategySpec
from shmstress.controlled.strategies.dpor import DPOR_BOUND
from shmstress.core.config import DEFAULT_NOISE, default_out
from shmstress.core.errors import ConfigError
from shmstress.core.shard import WHOLE, Shard
from shmstress.core.signals import InterruptFlag, interruptible
from shmstress.plain.checkpoint import CheckpointError, Checkpointing, Identity
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.spec import FreeSpec, PlainSpec
from shmstress.repro.bundle import replay_command
from shmstress.repro.plain_bundle import from_outcome, write_plain_bundle

PAPER_EXECUTIONS = 100_000
PAPER_HEADLINE = (
    "SCTBench paper (Thomson, Donaldson, Betts, ACM TOPC 2016): within 100,000 schedules "
    "PCT d=3 found 48 of its 49 buggy programs, more than DFS, preemption bounding, delay "
    "bounding and a random scheduler"
)
PROGRESS_EVERY = 10_000  # executions of one trial between two progress lines
SUITE = "sctbench"


@dataclass(frozen=True)
class SuiteStrategy:
    """A column of the table: a strategy and whether its trials differ by seed."""

    key: str
    spec: StrategySpec
    seeded: bool = True  # False: one trial stands for every seed
    free: FreeSpec | None = None  # free mode: ``spec`` is not used

    @property
    def is_default(self) -> bool:
        return self.free is None and self.spec == spec_named(DEFAULT)

    @property
    def single(self) -> bool:
        """One controlled strategy alone: what the default is measured against."""
        return self.free is None and not self.is_default


STRATEGIES: tuple[SuiteStrategy, ...] = (
    SuiteStrategy("default", spec_named(DEFAULT)),
    SuiteStrategy("pct-d1", PctSpec(depth=1)),
    SuiteStrategy("pct-d2", PctSpec(depth=2)),
    SuiteStrategy("pct-d3", PctSpec(depth=3)),
    SuiteStrategy("random-walk", RandomWalkSpec()),
    *(SuiteStrategy(f"exhaustive-b{bound}", ExhaustiveSpec(bound=bound),
                    seeded=False) for bound in range(4)),
    SuiteStrategy("dpor", DporSpec(bound=DPOR_BOUND), seeded=False),
    SuiteStrategy("free-noise", PctSpec(), free=FreeSpec(noise=DEFAULT_NOISE)),
)
TWIN_STRATEGIES = ("default", "pct-d3", "random-walk")
RATIO_LIMIT = 3.0
"""The default's median on a program may be at most this many times the best single one's."""


@dataclass(frozen=True)
class SuiteOptions:
    """What to run: the paper's budget by default, tiny ones for tests and quick looks."""

    executions: int = PAPER_EXECUTIONS  # per trial
    seeds: int = 5
    seed: int = 0  # the first seed; trials use seed, seed + 1, ...
    programs: tuple[str, ...] = ()  # buggy programs to run; () for all
    strategies: tuple[str, ...] = ()  # keys of STRATEGIES; () for all
    twin_executions: int | None = None  # per twin and strategy; None: ``executions``
    twin_strategies: tuple[str, ...] = TWIN_STRATEGIES  # keys the twins run under

    def selected_programs(self) -> tuple[Program, ...]:
        return tuple(program(name) for name in self.programs) if self.programs else BUGGY

    def selected_strategies(self) -> tuple[SuiteStrategy, ...]:
        if not self.strategies:
            return STRATEGIES
        return tuple(s for s in STRATEGIES if s.key in self.strategies)


@dataclass(frozen=True)
class Trial:
    """One exploration: until the first failure, the budget, or the end of the search."""

    seed: int
    found: bool
    executions: int  # to the first failure (included), or all that ran
    seconds: float
    end: str = ""  # how the failing execution ended
    message: str = ""  # its one-line failure
    expected: bool = True  # the failure is one the program is expected to show
    exhausted: bool = False  # the strategy ran out of schedules (exhaustive search)
    replay: str = ""  # an unexpected failure's replay command (its bundle is written)


@dataclass(frozen=True)
class StrategyFigures:
    """One cell of the table: a program under a strategy, over its trials."""

    strategy: str
    budget: int
    trials: tuple[Trial, ...]

    @property
    def found(self) -> int:
        return sum(t.found for t in self.trials)

    @property
    def all_found(self) -> bool:
        return bool(self.trials) and self.found == len(self.trials)

    @property
    def median_executions(self) -> float:
        """Misses count as the budget (a search that ran out of schedules too, so that sums
        compare): a lower bound unless ``all_found``."""
        return float(statistics.median(t.executions if t.found else self.budget
                                       for t in self.trials))

    @property
    def median_s(self) -> float:
        return float(statistics.median(t.seconds for t in self.trials))

    @property
    def exhausted(self) -> bool:
        return any(t.exhausted and not t.found for t in self.trials)

    @property
    def unexpected(self) -> tuple[str, ...]:
        return tuple(t.message + (f" (replay: {t.replay})" if t.replay else "")
                     for t in self.trials if t.found and not t.expected)


@dataclass(frozen=True)
class TwinFigures:
    """A twin's run under one strategy: clean, or how it first failed."""

    twin: str
    strategy: str
    seed: int
    executions: int
    seconds: float
    ends: dict[str, int]
    end: str = ""  # how the first failing execution ended, "" if none failed
    message: str = ""
    allowed: bool = True  # no failure, or one the twin may show (din_phil*_unsat: deadlock)
    replay: str = ""  # a failure it may not show: its replay command (its bundle is written)

    @property
    def clean(self) -> bool:
        return not self.end


@dataclass(frozen=True)
class ProgramFigures:
    """A row of the table, with its twins' runs."""

    program: str
    threads: int
    strategies: tuple[StrategyFigures, ...]
    twins: tuple[TwinFigures, ...] = ()


@dataclass
class SuiteReport:
    """The programs measured to their end (a signal cuts the rest), in the order run."""

    options: SuiteOptions
    programs: list[ProgramFigures] = field(default_factory=list)
    cut: str | None = None  # the program a SIGINT or SIGTERM cut short: none of it kept
    headline: str = PAPER_HEADLINE
    shard: Shard = WHOLE  # a shard measures the programs whose every trial it holds
    shard_trials: int = 0  # a shard's share of the suite's trials
    suite_trials: int = 0  # the suite's, every shard's

    def totals(self) -> list[tuple[str, int, int, float, float]]:
        """Per strategy: (key, programs found in every seed, in some seed, sum of median
        executions, sum of median seconds), over the programs measured to their end."""
        rows = []
        for strategy in self.options.selected_strategies():
            figures = [f for p in self.programs for f in p.strategies
                       if f.strategy == strategy.key]
            rows.append((strategy.key, sum(f.all_found for f in figures),
                         sum(f.found > 0 for f in figures),
                         sum(f.median_executions for f in figures),
                         sum(f.median_s for f in figures)))
        return rows


    def default_check(self) -> DefaultCheck | None:
        """The default against the single strategies, or None if either did not run."""
        selected = self.options.selected_strategies()
        default = next((s.key for s in selected if s.is_default), None)
        singles = [s.key for s in selected if s.single]
        if default is None or not singles or not self.programs:
            return None
        sums = {key: executions for key, _, _, executions, _ in self.totals()}
        ratios = []
        for p in self.programs:
            medians = {f.strategy: f.median_executions for f in p.strategies}
            best = min(singles, key=lambda key: medians[key])
            ratios.append((p.program, medians[default], best, medians[best]))
        return DefaultCheck(sums[default], tuple((key, sums[key]) for key in singles),
                            tuple(ratios))


@dataclass(frozen=True)
class DefaultCheck:
    """Issue 13's figures: the default's sum below every single strategy's, and on no
    program more than ``RATIO_LIMIT`` times the best single strategy's median."""

    default_sum: float
    single_sums: tuple[tuple[str, float], ...]
    ratios: tuple[tuple[str, float, str, float], ...]  # program, default, best key, best

    @property
    def below_every_single(self) -> bool:
        return all(self.default_sum < total for _, total in self.single_sums)

    def over_limit(self) -> tuple[tuple[str, float, str, float], ...]:
        return tuple(r for r in self.ratios if r[1] > RATIO_LIMIT * max(1.0, r[3]))


Log = Callable[[str], None]


@dataclass(frozen=True)
class TrialTask:
    """One exploration of the suite, all a process needs to run it: a buggy program's trial
    under a strategy and a seed, or a twin's run."""

    program: str
    strategy: str  # a key of STRATEGIES
    seed: int
    budget: int  # executions
    owner: str  # the buggy program whose row it belongs to (a twin's, or itself)
    checkpoint: str = ""  # the suite's checkpoint directory (``checkpoints.py``), or none

    @property
    def twin(self) -> bool:
        return self.owner != self.program

    @property
    def what(self) -> str:
        twin = " (twin)" if self.twin else ""
        return f"{self.program}{twin} {self.strategy} seed {self.seed}"


def suite_tasks(options: SuiteOptions, checkpoint: Path | None = None) -> list[TrialTask]:
    """Every trial of the suite, in the order a serial run takes them: per program, each
    strategy's seeds, then its twins under each of ``options.twin_strategies``."""
    tasks: list[TrialTask] = []
    twin_budget = options.twin_executions or options.executions
    directory = "" if checkpoint is None else str(checkpoint)
    for subject in options.selected_programs():
        for strategy in options.selected_strategies():
            seeds = range(options.seed, options.seed + (options.seeds if strategy.seeded else 1))
            tasks.extend(TrialTask(subject.name, strategy.key, seed, options.executions,
                                   subject.name, directory) for seed in seeds)
        tasks.extend(TrialTask(name, key, options.seed, twin_budget, subject.name, directory)
                     for name in subject.twins for key in options.twin_strategies)
    return tasks


def _strategy(key: str) -> SuiteStrategy:
    return next(s for s in STRATEGIES if s.key == key)


def _spec(task: TrialTask) -> PlainSpec:
    return replace(program(task.program).spec(), free=_strategy(task.strategy).free)


def _checkpointing(task: TrialTask, log: Log) -> Checkpointing | None:
    if not task.checkpoint:
        return None
    return Checkpointing(SuiteDirectory(Path(task.checkpoint)).checkpoint_of(task),
                         log=lambda line: log(f"{SUITE}: {task.what}: {line}"))


def _identity(task: TrialTask) -> Identity:
    return Identity.of(_spec(task), _strategy(task.strategy).spec, task.seed, task.budget)


def _explore(task: TrialTask, log: Log) -> PlainResult:
    ran = [0]

    def progress(done: int, ends: dict[str, int]) -> None:
        ran[0] = done
        if done % PROGRESS_EVERY == 0:
            log(f"{SUITE}: {task.what}: {done:,} executions, {ends}")

    strategy = _strategy(task.strategy)
    checkpoint = _checkpointing(task, log)
    started = time.monotonic()
    try:
        return explore(_spec(task), Exploration(strategy.spec, task.seed, task.budget),
                       progress, checkpoint)
    except KeyboardInterrupt:  # how far it got is all a long trial cut short leaves
        done, saved = ran[0], ""
        header = None if checkpoint is None else checkpoint.read_header()
        if checkpoint is not None and header is not None:
            done = header.executions
            saved = (f"; saved in {checkpoint.path} at execution {done:,}: the same command "
                     "resumes it")
        log(f"{SUITE}: {task.what}: cut short after {done:,} executions without a "
            f"failure, {time.monotonic() - started:.2f} s{saved}")
        raise


def _describe(result: PlainResult) -> tuple[str, str]:
    failing = result.failing  # a failure, or a process hung outside control (unexpected)
    if failing is None:
        return "", ""
    message = failing.failure.message if failing.failure is not None else failing.end.value
    return failing.end.value, message


def run_task(task: TrialTask, log: Log) -> Trial | TwinFigures:
    """Run one trial (in this process), log its outcome line, and keep its result in the
    checkpoint directory if there is one."""
    figures = _run_task(task, log)
    if task.checkpoint:
        SuiteDirectory(Path(task.checkpoint)).keep(task, figures)
    return figures


def _run_task(task: TrialTask, log: Log) -> Trial | TwinFigures:
    result = _explore(task, log)
    end, message = _describe(result)
    subject = program(task.program)
    expected = not end or subject.expected(end)
    replay = "" if expected else _bundle(task, result)
    if task.twin:
        twin = TwinFigures(task.program, task.strategy, task.seed, result.executions,
                           result.elapsed_s, dict(result.ends), end, message, expected, replay)
        log(f"{SUITE}: {task.what}: {_twin_outcome(twin)}, {twin.seconds:.2f} s")
        return twin
    trial = Trial(task.seed, bool(end), result.executions, result.elapsed_s, end, message,
                  expected, result.exhausted, replay)
    log(f"{SUITE}: {task.what}: {_outcome(trial)}, {trial.seconds:.2f} s")
    return trial


def _bundle(task: TrialTask, result: PlainResult) -> str:
    """A failure the program should not show, written as a bundle (in ``$SHMSTRESS_OUT``
    or ``shmstress-out``): the command that replays it, or "" for a process that hung
    outside control (nothing to replay)."""
    failing = result.failing
    if failing is None or not failing.failed:
        return ""
    spec = _spec(task)
    bundle = from_outcome(spec.scenario.describe(), spec, result.strategy, task.seed,
                          result.failing_index, failing)
    return replay_command(write_plain_bundle(bundle, Path(default_out())))


def _outcome(trial: Trial) -> str:
    if trial.end:
        return (f"{trial.end} after {trial.executions:,} executions ({trial.message})"
                + (f"; replay: {trial.replay}" if trial.replay else ""))
    return (f"nothing in {trial.executions:,} executions"
            + (" (search complete)" if trial.exhausted else ""))


def _twin_outcome(twin: TwinFigures) -> str:
    if not twin.end:
        return f"clean over {twin.executions:,} executions"
    return (f"{twin.end} after {twin.executions:,} executions ({twin.message})"
            + (f"; replay: {twin.replay}" if twin.replay else ""))


def _run_serial(tasks: list[TrialTask], log: Log,
                interrupt: InterruptFlag) -> dict[int, Trial | TwinFigures]:
    results: dict[int, Trial | TwinFigures] = {}
    for index, task in enumerate(tasks):
        try:
            results[index] = run_task(task, log)
        except KeyboardInterrupt:
            break
        if interrupt.fired:
            break
    return results


def _assemble(options: SuiteOptions, tasks: list[TrialTask],
              results: dict[int, Trial | TwinFigures],
              skip_incomplete: bool = False) -> tuple[list[ProgramFigures], str | None]:
    """The programs whose every trial ran, in order, up to the first one that was cut (with
    ``skip_incomplete``, a shard's: every program whose trials it holds, others skipped)."""
    programs: list[ProgramFigures] = []
    for subject in options.selected_programs():
        mine = [i for i, t in enumerate(tasks) if t.owner == subject.name]
        if any(i not in results for i in mine):
            if skip_incomplete:
                continue
            return programs, subject.name
        trials: dict[str, list[Trial]] = {}
        twins = []
        for i in mine:
            found = results[i]
            if isinstance(found, TwinFigures):
                twins.append(found)
            else:
                trials.setdefault(tasks[i].strategy, []).append(found)
        figures = tuple(StrategyFigures(s.key, options.executions, tuple(trials[s.key]))
                        for s in options.selected_strategies())
        programs.append(ProgramFigures(subject.name, subject.threads, figures, tuple(twins)))
    return programs, None


def run_suite(options: SuiteOptions, log: Log, jobs: int = 1,
              checkpoint: Path | None = None, shard: Shard = WHOLE) -> SuiteReport:
    """Every selected trial, ``jobs`` at a time (1: one after the other, in this process;
    more: each in a process of its own, ``bench.pool``), with the same figures either way:
    a trial's executions depend on its seed alone. A SIGINT or SIGTERM stops the suite: the
    programs whose every trial ran are kept, in order up to the first one it cut, which is
    named in ``cut``. With a ``checkpoint`` directory (``checkpoints.py``) the trials that
    finished in an earlier run of the same command are not run again, and the others
    resume where they stopped. A ``shard`` runs its block of the suite's trials (each with
    its seed, as the whole suite runs it) and keeps their results in ``checkpoint``, whose
    every shard's files, gathered in one directory, give the whole suite's table."""
    report = SuiteReport(options)
    tasks = suite_tasks(options, checkpoint)
    if shard.count > len(tasks):
        raise ConfigError(f"--shard {shard}: the suite has {len(tasks):,} trials, so at most "
                          "that many shards have one to run")
    results = {} if checkpoint is None else _kept(options, tasks, SuiteDirectory(checkpoint),
                                                  log)
    share = shard.select(range(len(tasks)))
    todo = [index for index in share if index not in results]
    with interruptible() as interrupt:
        if jobs <= 1:
            ran = _run_serial([tasks[i] for i in todo], log, interrupt)
        else:
            ran = run_pool([tasks[i] for i in todo], run_task, jobs, log, interrupt)
        if interrupt.fired:
            interrupt.acknowledge()
    results.update((todo[index], result) for index, result in ran.items())
    if shard.whole:
        report.programs, report.cut = _assemble(options, tasks, results)
    else:
        report.programs, _ = _assemble(options, tasks, results, skip_incomplete=True)
        report.cut = next((tasks[i].owner for i in share if i not in results), None)
        report.shard, report.shard_trials, report.suite_trials = shard, len(share), len(tasks)
    return report


def _figures(kind: str, data: dict[str, Any], path: Path) -> Trial | TwinFigures:
    """A trial's result as ``SuiteDirectory.keep`` wrote it (JSON: ``ends`` a dict)."""
    try:
        return TwinFigures(**data) if kind == TwinFigures.__name__ else Trial(**data)
    except TypeError as exc:  # written by another version of these classes
        raise CheckpointError(f"trial result {path} does not fit this shmstress ({exc}): "
                              "delete it to run the trial again") from exc


def _kept(options: SuiteOptions, tasks: list[TrialTask], directory: SuiteDirectory,
          log: Log) -> dict[int, Trial | TwinFigures]:
    """The results of the trials that finished in an earlier run of this command; every
    other trial's checkpoint is checked, so that a wrong one stops the suite before it
    starts (``CheckpointError``, one line)."""
    directory.claim(options, lambda line: log(f"{SUITE}: {line}"))
    results: dict[int, Trial | TwinFigures] = {}
    for index, task in enumerate(tasks):
        kept = directory.kept(task)
        if kept is None:
            Checkpointing(directory.checkpoint_of(task)).check(_identity(task))
            continue
        found = results[index] = _figures(*kept, directory.result_of(task))
        outcome = (_twin_outcome(found) if isinstance(found, TwinFigures)
                   else _outcome(found))
        log(f"{SUITE}: {task.what}: finished in an earlier run: {outcome}, "
            f"{found.seconds:.2f} s")
    return results


def report_json(report: SuiteReport) -> dict[str, Any]:
    """The report as JSON data: every trial, and the figures the table prints from them."""
    data = asdict(report)
    for program_data, figures in zip(data["programs"], report.programs, strict=True):
        for strategy_data, f in zip(program_data["strategies"], figures.strategies,
                                    strict=True):
            strategy_data.update(found=f.found, all_found=f.all_found,
                                 median_executions=f.median_executions, median_s=f.median_s,
                                 exhausted=f.exhausted)
        for twin_data, twin in zip(program_data["twins"], figures.twins, strict=True):
            twin_data["clean"] = twin.clean
    data["totals"] = [
        {"strategy": key, "found_every_seed": every, "found_some_seed": some,
         "median_executions_sum": executions, "median_s_sum": seconds}
        for key, every, some, executions, seconds in report.totals()
    ]
    check = report.default_check()
    if check is not None:
        data["default_check"] = {
            "default_sum": check.default_sum, "single_sums": dict(check.single_sums),
            "below_every_single": check.below_every_single,
            "ratios": [{"program": p, "default": d, "best": key, "best_median": b}
                       for p, d, key, b in check.ratios],
            "over_limit": [p for p, _, _, _ in check.over_limit()]}
    data["paper"] = {"headline": PAPER_HEADLINE, "executions": PAPER_EXECUTIONS,
                     "programs": 49, "pct_d3_found": 48}
    return data


def _cell(f: StrategyFigures) -> str:
    if f.exhausted and not f.found:
        return f"0/{len(f.trials)} all {max(t.executions for t in f.trials):,}"
    bound = "" if f.all_found else ">="
    mark = "!" if f.unexpected else ""
    return f"{f.found}/{len(f.trials)} {bound}{f.median_executions:,.0f}{mark}"


def _time_cell(f: StrategyFigures) -> str:
    bound = "" if f.all_found else ">="
    return f"{bound}{f.median_s:.2f}"


def _check_lines(check: DefaultCheck | None) -> list[str]:
    if check is None:
        return []
    verdict = "below" if check.below_every_single else "NOT below"
    lines = [f"the default's sum of medians, {check.default_sum:,.0f} executions, is {verdict} "
             "every single strategy's: " + ", ".join(f"{key} {total:,.0f}"
                                                    for key, total in check.single_sums)]
    over = check.over_limit()
    worst = max(check.ratios, key=lambda r: r[1] / max(1.0, r[3]))
    lines.append(f"the default's median over the best single strategy's, per program: worst "
                 f"{worst[0]} {worst[1] / max(1.0, worst[3]):.1f}x ({worst[1]:,.0f} against "
                 f"{worst[2]}'s {worst[3]:,.0f}); "
                 + (f"{len(over)} above {RATIO_LIMIT:g}x: " + ", ".join(
                     f"{p} {d:,.0f} vs {key} {b:,.0f}" for p, d, key, b in over)
                    if over else f"none above {RATIO_LIMIT:g}x"))
    return lines


def render_suite(report: SuiteReport) -> str:
    options = report.options
    strategies = options.selected_strategies()
    keys = [s.key for s in strategies]  # the default's column is "default"
    width = max(14, *(len(k) + 1 for k in keys))
    name_width = max([22, *(len(p.program) + 1 for p in report.programs)])
    lines = [
        f"SCTBench ports ({len(report.programs)} buggy programs), plain-code exploration "
        f"(controlled; free-noise: free mode, noise {DEFAULT_NOISE:g}), budget "
        f"{options.executions:,} executions per trial, "
        f"{options.seeds} seeds from {options.seed} (exhaustive: one search per bound, "
        f"seed-independent)",
        "executions to the first failure: found/trials, median (a miss counts as the "
        "budget: >= marks a lower bound; 'all N': the bounded search ran all its N schedules "
        "without a failure; ! marks a failure the program should not show):",
        f"  {'program':{name_width}}{'thr':>4} " + "".join(f"{k:>{width}}" for k in keys),
    ]
    for p in report.programs:
        lines.append(f"  {p.program:{name_width}}{p.threads:>4} "
                     + "".join(f"{_cell(f):>{width}}" for f in p.strategies))
    lines.append("wall time to the first failure, median seconds (session start included):")
    for p in report.programs:
        lines.append(f"  {p.program:{name_width}}{'':>4} "
                     + "".join(f"{_time_cell(f):>{width}}" for f in p.strategies))
    searched = [(p.program, f.strategy) for p in report.programs for f in p.strategies
                if f.exhausted]
    if searched:
        lines.append("bounded searches that ended without a failure (the bug needs more "
                     "preemptions): " + ", ".join(f"{n} {s}" for n, s in searched))
    odd = [(p.program, f.strategy, m) for p in report.programs for f in p.strategies
           for m in f.unexpected]
    lines.extend(f"  unexpected failure: {n} {s}: {m}" for n, s, m in odd)
    twins = [t for p in report.programs for t in p.twins]
    if twins:
        lines.append("twins (must run clean; din_phil*_unsat may only deadlock):")
        for t in twins:
            verdict = ("clean" if t.clean else
                       f"{t.end} after {t.executions:,}" + ("" if t.allowed else " UNEXPECTED")
                       + (f" (replay: {t.replay})" if t.replay else ""))
            lines.append(f"  {t.twin:{name_width}} {t.strategy:12} {t.executions:>9,} "
                         f"executions in {t.seconds:8.2f} s: {verdict}")
        clean = sum(t.clean for t in twins)
        allowed = sum(t.allowed for t in twins)
        lines.append(f"  {clean} of {len(twins)} twin runs clean, {allowed} of {len(twins)} "
                     "clean or deadlocked only where the C code can")
    lines.append("totals (programs found in every seed / in some seed; sums of the medians):")
    for key, all_found, any_found, executions, seconds in report.totals():
        lines.append(f"  {key:16} found {all_found:>2} / {any_found:>2} of "
                     f"{len(report.programs)}, {executions:>12,.0f} executions, "
                     f"{seconds:9.2f} s")
    lines.extend(_check_lines(report.default_check()))
    lines.append(f"  {report.headline}")
    if options.executions != PAPER_EXECUTIONS:
        lines.append(f"  (this run's budget is {options.executions:,} executions, not the "
                     f"paper's {PAPER_EXECUTIONS:,}; its 49 programs include larger ones "
                     "not ported here)")
    else:
        lines.append("  (the paper's 49 programs include larger ones not ported here)")
    if report.cut is not None:
        lines.append(f"interrupted: program {report.cut!r} was cut short by a signal; its "
                     "figures are left out")
    if not report.shard.whole:
        lines.append(f"shard {report.shard}: {report.shard_trials:,} of the suite's "
                     f"{report.suite_trials:,} trials, their results kept in --checkpoint "
                     "(the table holds the programs whose every trial it holds); the whole "
                     "table: gather every shard's directory into one and run the command "
                     "again without --shard")
    return "\n".join(lines)
