"""``shmstress bench``: throughput and detection figures, each a ratio to a baseline of one run.

Timing goals live here, not in tests: the machines are shared and noisy, so
every figure is printed next to the baseline measured in the same run.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from shmstress.bench.controlled import (
    ControlledBench,
    render_controlled_bench,
    run_controlled_bench,
)
from shmstress.bench.learning import LearningBench, render_learning_bench, run_learning_bench
from shmstress.bench.library_race import LibraryRaceTracker
from shmstress.bench.linearizability import (
    LinearizabilityBench,
    render_linearizability_bench,
    run_linearizability_bench,
)
from shmstress.bench.plain import PlainBench, PlainBudgets, render_plain_bench, run_plain_bench
from shmstress.core.config import RunConfig
from shmstress.core.noise import AIMED, UNIFORM, NoiseConfig
from shmstress.core.result import RunResult
from shmstress.core.signals import interruptible
from shmstress.free.runner import run
from shmstress.plugin.registry import spec_of

RACY_DRA = ("gather-unchecked", "events-unordered", "original")
CORRECT_DRA = ("fixed", "single-lock")
LIBRARY_RACE = "library-race"
ALL = "all"


@dataclass(frozen=True)
class Target:
    """A racy variant the detection and rate sections time: which tracker, and its name in
    the figures (a DRA variant goes by its own name, as it always did)."""

    name: str
    tracker: str
    variant: str | None = None  # None: the tracker's default

    @property
    def dra(self) -> bool:
        """Whether the symptom-only baseline (double allocation alone) applies."""
        return self.tracker == "dra"


def library_target() -> Target:
    """The race inside a library call (``library_race``), loaded by path as a user's own."""
    return Target(LIBRARY_RACE, spec_of(LibraryRaceTracker))


_OTHERS = (  # the other built-in trackers' racy variants and mutants
    ("claim-deallocation", "pod-scheduling-flag"),
    ("device-group", "select-then-allocate"),
    ("device-group", "mutant-padded-release"),
    ("device-group", "mutant-unreserve-returns-early"),
    ("gpu-assignments", "running-only"),
    ("gpu-assignments", "list-before-lock"),
    ("gpu-assignments", "mutant-all-phases"),
)
OTHER_RACY = tuple(f"{tracker}/{variant}" for tracker, variant in _OTHERS)


def targets(names: tuple[str, ...] | None) -> list[Target]:
    """The targets ``--variant`` names: by default the racy DRA variants and the library
    race; ``all`` adds the other trackers' racy variants and mutants (``TRACKER/VARIANT``)."""
    default = [*RACY_DRA, LIBRARY_RACE]
    wanted = default if not names else [
        n for name in names for n in ([*default, *OTHER_RACY] if name == ALL else [name])]
    chosen: list[Target] = []
    for name in dict.fromkeys(wanted):
        if name in RACY_DRA:
            chosen.append(Target(name, "dra", name))
        elif name == LIBRARY_RACE:
            chosen.append(library_target())
        else:
            tracker, _, variant = name.partition("/")
            chosen.append(Target(name, tracker, variant))
    return chosen


def target_names() -> tuple[str, ...]:
    """Every name ``--variant`` takes."""
    return (*RACY_DRA, LIBRARY_RACE, *OTHER_RACY, ALL)


@dataclass(frozen=True)
class BenchOptions:
    trials: int = 20
    budget_s: float = 5.0
    free_seconds: float = 3.0
    clean_points: int = 1_000_000
    noise: float = 0.1
    policy: str = NoiseConfig().policy  # of the free-mode and clean sections' runs
    seed: int = 0
    variants: tuple[str, ...] | None = None
    rate_seconds: float = 3.0
    sections: tuple[str, ...] = ("free", "detection", "rate", "clean", "controlled", "plain",
                                 "learning", "linearizability")


@dataclass(frozen=True)
class Detection:
    """Time to first violation over trials of one variant in one mode (from run start)."""

    variant: str  # the target's name
    mode: str
    trials: int
    found: int
    median_s: float
    max_s: float
    under_2s: int
    times_s: tuple[float, ...] = ()
    startups_s: tuple[float, ...] = ()  # per trial: run start until every worker made a point
    after_startup_s: tuple[float, ...] = ()  # per found trial: from the end of its start-up

    @property
    def median_after_startup_s(self) -> float | None:
        """Median time to first violation from the end of the start-up transient, the missed
        trials counted as the budget (None: no trial knew its start-up)."""
        if not self.after_startup_s:
            return None
        missed = self.trials - len(self.after_startup_s)
        return statistics.median([*self.after_startup_s, *[self.max_s] * missed]
                                 if missed else self.after_startup_s)


@dataclass(frozen=True)
class SteadyRate:
    """Root-cause violations per second once the run is past its start-up transient.

    Time to first violation from run start cannot show what noise is worth once it
    is near the start-up floor (forking the workers), and runs without noise find
    most of their races in that transient, when workers start one after another.
    This measure leaves the first ``warmup_s`` out and counts every violation: it is
    the bench's headline.
    """

    variant: str  # the target's name
    seconds: float  # measured window per mode, after the warm-up (summed over its runs)
    warmup_s: float
    counts: tuple[tuple[str, int], ...]  # (noise mode, violations in the window), quiet last

    @property
    def quiet(self) -> int:
        return self.counts[-1][1]

    def ratio(self, mode: str) -> float:
        """A mode's rate over the quiet one; with no quiet violation, the bound from one."""
        return dict(self.counts)[mode] / max(self.quiet, 1)


@dataclass(frozen=True)
class CleanRun:
    variant: str
    points: int
    violations: int
    elapsed_s: float
    exit_reason: str


@dataclass
class BenchReport:
    free_points_per_s: float = 0.0
    free_points: int = 0
    unrecorded_points_per_s: float = 0.0  # the same free run with recording off
    recording_ns_per_event: float = 0.0
    free_policy: str = ""  # the noise policy of the free-mode runs
    detections: list[Detection] = field(default_factory=list)
    rates: list[SteadyRate] = field(default_factory=list)
    clean: list[CleanRun] = field(default_factory=list)
    controlled: ControlledBench | None = None
    plain: PlainBench | None = None
    learning: list[LearningBench] = field(default_factory=list)
    linearizability: LinearizabilityBench | None = None
    completed: list[str] = field(default_factory=list)  # sections whose figures are all in
    cut: str | None = None  # the section a SIGINT or SIGTERM cut short: no figure of it kept

    def take(self, section: str, scratch: BenchReport) -> None:
        """Keep the figures ``scratch`` measured for ``section``, which ran to its end."""
        if section == "free":
            self.free_points_per_s = scratch.free_points_per_s
            self.free_points = scratch.free_points
            self.unrecorded_points_per_s = scratch.unrecorded_points_per_s
            self.recording_ns_per_event = scratch.recording_ns_per_event
            self.free_policy = scratch.free_policy
        elif section == "detection":
            self.detections = scratch.detections
        elif section == "rate":
            self.rates = scratch.rates
        elif section == "clean":
            self.clean = scratch.clean
        elif section == "controlled":
            self.controlled = scratch.controlled
        elif section == "plain":
            self.plain = scratch.plain
        elif section == "learning":
            self.learning = scratch.learning
        elif section == "linearizability":
            self.linearizability = scratch.linearizability
        self.completed.append(section)


_DEFAULT_POLICY = NoiseConfig().policy
_MODES: dict[str, tuple[str | None, tuple[str, ...] | None]] = {
    # mode name: (noise policy, or None for none; invariants checked). The default first.
    f"harness ({_DEFAULT_POLICY} noise, default, all invariants)": (_DEFAULT_POLICY, None),
    **{f"{policy} noise, all invariants": (policy, None)
       for policy in (AIMED, UNIFORM) if policy != _DEFAULT_POLICY},
    "no noise, all invariants": (None, None),
    "rerun baseline (no noise, double allocation only)": (None, ("no-double-allocation",)),
}
_RATE_MODES = {
    (f"{policy} noise" + (" (default)" if policy == _DEFAULT_POLICY else "")
     if policy else "no noise"): policy
    for policy, checks in _MODES.values() if checks is None
}


def _noise(options: BenchOptions, policy: str | None) -> NoiseConfig:
    return NoiseConfig(options.noise, policy=policy) if policy else NoiseConfig(0.0)


def run_bench(options: BenchOptions, log: Callable[[str], None]) -> BenchReport:
    """Measure each section of ``options`` in turn. A SIGINT or SIGTERM stops the bench:
    the sections measured to their end are kept, the one it cut is named in ``cut`` and
    none of its figures kept (they would include a run torn down half-way)."""
    report = BenchReport()
    with interruptible() as interrupt:
        for section in BenchOptions.sections:
            if section not in options.sections:
                continue
            scratch = BenchReport()
            try:
                _SECTIONS[section](options, scratch, log)
            except KeyboardInterrupt:
                interrupted = True
            else:  # a run of the section that was torn down returns; the flag tells
                interrupted = interrupt.fired
            if interrupted:
                interrupt.acknowledge()
                report.cut = section
                break
            report.take(section, scratch)
    return report


def _base(options: BenchOptions, target: Target | None = None) -> RunConfig:
    if target is None:
        return RunConfig(tracker="dra", noise=_noise(options, options.policy), seed=options.seed)
    return RunConfig(tracker=target.tracker, variant=target.variant,
                     noise=_noise(options, options.policy), seed=options.seed)


def _detection(options: BenchOptions, report: BenchReport, log: Callable[[str], None]) -> None:
    """The trials of a target go mode by mode, in order then in reverse, trial after trial,
    so that a machine getting busier or quieter weighs on every mode alike."""
    for target in targets(options.variants):
        base = _base(options, target)
        modes = {mode: checks for mode, (_, checks) in _MODES.items()
                 if checks is None or target.dra}  # the symptom-only baseline: DRA's
        log(f"detection: {target.name}, {options.trials} trials of each of "
            f"{', '.join(modes)}")
        found: dict[str, _Found] = {mode: _Found() for mode in modes}
        for trial in range(options.trials):
            for mode in (list(modes) if trial % 2 == 0 else list(reversed(modes))):
                result = run(replace(
                    base,
                    duration=options.budget_s,
                    seed=options.seed + trial,
                    noise=_noise(options, _MODES[mode][0]),
                    checks=modes[mode],
                ))
                found[mode].add(result)
        for mode, seen in found.items():
            report.detections.append(seen.detection(target.name, mode, options))


@dataclass
class _Found:
    """What the trials of one mode found so far."""

    times: list[float] = field(default_factory=list)
    startups: list[float] = field(default_factory=list)
    after: list[float] = field(default_factory=list)

    def add(self, result: RunResult) -> None:
        first = result.principal_violation
        if first is not None and first.elapsed_s is not None:
            self.times.append(first.elapsed_s)
            if result.first_after_startup_s is not None:
                self.after.append(result.first_after_startup_s)
        startup = _startup_s(result)
        if startup is not None:
            self.startups.append(startup)

    def detection(self, name: str, mode: str, options: BenchOptions) -> Detection:
        censored = self.times + [options.budget_s] * (options.trials - len(self.times))
        return Detection(
            variant=name,
            mode=mode,
            trials=options.trials,
            found=len(self.times),
            median_s=statistics.median(censored),
            max_s=max(censored),
            under_2s=sum(t < 2.0 for t in self.times),
            times_s=tuple(self.times),
            startups_s=tuple(self.startups),
            after_startup_s=tuple(self.after),
        )


def _rate(options: BenchOptions, report: BenchReport, log: Callable[[str], None]) -> None:
    for target in targets(options.variants):
        log(f"rate: {target.name}, {options.rate_seconds:g} s per noise policy and without "
            "noise")
        report.rates.append(_steady_rate(options, _base(options, target), target.name))


def _clean(options: BenchOptions, report: BenchReport, log: Callable[[str], None]) -> None:
    for variant in CORRECT_DRA:
        log(f"clean: {variant}, {options.clean_points:,} points")
        result = run(
            replace(
                _base(options),
                variant=variant,
                duration=max(60.0, options.clean_points / 2_000),  # a loaded machine: slow
                max_points=options.clean_points,
                stop_on_first=False,
            )
        )
        report.clean.append(
            CleanRun(variant, result.points, result.violation_count, result.elapsed_s,
                     result.exit_reason.value)
        )


def _controlled(options: BenchOptions, report: BenchReport, log: Callable[[str], None]) -> None:
    report.controlled = run_controlled_bench(min(options.trials, 10), options.seed, log)


WARMUP_S = 0.25
_RATE_KEPT = 50_000  # violations kept in detail (with their time) per rate run
_RATE_ROUNDS = 2  # runs per mode: the modes in order, then in reverse


def _steady_rate(options: BenchOptions, base: RunConfig, name: str) -> SteadyRate:
    """Each mode runs twice, the modes in order then in reverse, so that a machine getting
    busier or quieter during the measure weighs on every mode alike."""
    counts = dict.fromkeys(_RATE_MODES, 0)
    order = list(_RATE_MODES)
    for mode in [*order, *reversed(order)]:
        result = run(replace(
            base,
            duration=options.rate_seconds,
            noise=_noise(options, _RATE_MODES[mode]),
            stop_on_first=False,
            max_violations=_RATE_KEPT,
        ))
        counts[mode] += sum(
            1 for v in result.violations
            if v.elapsed_s is not None and WARMUP_S <= v.elapsed_s < options.rate_seconds
        )
    window = _RATE_ROUNDS * (options.rate_seconds - WARMUP_S)
    return SteadyRate(name, window, WARMUP_S, tuple(counts.items()))


def _startup_s(result: RunResult) -> float | None:
    """Seconds from run start until the last worker recorded its first point."""
    recording = result.recording
    if recording is None or not recording.records or any(recording.ring_lost.values()):
        return None  # a wrapped ring has lost its worker's first records
    first: dict[int, int] = {}
    for record in recording.records:
        first.setdefault(record.worker, record.t_ns)
    if len(first) < len(result.workers):
        return None
    return (max(first.values()) - recording.mono0_ns) / 1e9


def _free_mode(options: BenchOptions, report: BenchReport, log: Callable[[str], None]) -> None:
    """Points/s with recording on and off in one run, and the cost per event.

    The runs go on, off, off, on, so that a machine getting busier or quieter
    during the bench weighs on both sides alike.
    """
    from shmstress.bench.recording import recording_ns_per_event

    base = _base(options)
    log(f"free mode: fixed variant, 4 x {options.free_seconds:g} s, recording on/off/off/on")
    totals = {True: [0, 0.0], False: [0, 0.0]}
    for record in (True, False, False, True):
        result = run(replace(base, variant="fixed", duration=options.free_seconds,
                             record=record))
        totals[record][0] += result.points
        totals[record][1] += result.elapsed_s
    report.free_policy = options.policy
    report.free_points = int(totals[True][0])
    report.free_points_per_s = totals[True][0] / totals[True][1]
    report.unrecorded_points_per_s = totals[False][0] / totals[False][1]
    log("recording cost per event")
    report.recording_ns_per_event = recording_ns_per_event()


def _plain(options: BenchOptions, report: BenchReport, log: Callable[[str], None]) -> None:
    report.plain = run_plain_bench(options.seed, log, PlainBudgets(trials=min(options.trials, 10)))


def _learning(options: BenchOptions, report: BenchReport, log: Callable[[str], None]) -> None:
    dra = tuple(t.name for t in targets(options.variants) if t.dra)  # what it learns on
    report.learning = run_learning_bench(dra or RACY_DRA, options.trials,
                                         options.budget_s, options.noise, options.seed, log)


def _linearizability(options: BenchOptions, report: BenchReport,
                     log: Callable[[str], None]) -> None:
    report.linearizability = run_linearizability_bench(options.seed, log)


_SECTIONS: dict[str, Callable[[BenchOptions, BenchReport, Callable[[str], None]], None]] = {
    "free": _free_mode,
    "detection": _detection,
    "rate": _rate,
    "clean": _clean,
    "controlled": _controlled,
    "plain": _plain,
    "learning": _learning,
    "linearizability": _linearizability,
}


def render_bench(report: BenchReport) -> str:
    """The figures of every section measured to its end; a section cut short by a signal is
    named, with none of its figures."""
    return "\n\n".join("\n".join(lines) for _, lines in bench_sections(report))


def bench_sections(report: BenchReport) -> list[tuple[str, list[str]]]:
    """``render_bench``'s sections, each under its title: the one rendering of the figures,
    printed by ``bench`` and laid out as a page by ``--markdown`` (``figures_page``)."""
    sections: list[tuple[str, list[str]]] = []
    done = report.completed
    if "rate" in done and report.rates:  # the headline: the start-up transient cannot flatter it
        sections.append(("Steady-state rate of violations", _render_rates(report)))
    if "free" in done:
        sections.append(("Free mode throughput", _render_free(report)))
    if "detection" in done:
        sections.append(("Time to first violation", _render_detection(report)))
    if "clean" in done:
        sections.append(("Correct variants", ["correct variants (keep counting):", *(
            f"  {c.variant:18} {c.points:>12,} points in {c.elapsed_s:6.1f} s: "
            f"{c.violations} violations ({c.exit_reason})" for c in report.clean)]))
    if "controlled" in done and report.controlled is not None:
        sections.append(("Controlled mode", render_controlled_bench(report.controlled)))
    if "plain" in done and report.plain is not None:
        sections.append(("Plain multiprocessing code", render_plain_bench(report.plain)))
    if "learning" in done and report.learning:
        sections.append(("Saved learning", render_learning_bench(report.learning)))
    if "linearizability" in done and report.linearizability is not None:
        sections.append(("Linearizability checker",
                         render_linearizability_bench(report.linearizability)))
    if report.cut is not None:
        before = "" if done else "; no section ran to its end"
        sections.append(("Interrupted", [
            f"interrupted: section {report.cut!r} was cut short by a signal; its "
            f"figures are left out{before}"]))
    return sections


def _render_free(report: BenchReport) -> list[str]:
    ratio = (report.free_points_per_s / report.unrecorded_points_per_s
             if report.unrecorded_points_per_s else 0.0)
    return [
        f"free mode (fixed, recording on): {report.free_points_per_s:,.0f} points/s "
        f"({report.free_points:,} points, {report.free_policy} noise)",
        f"  recording off: {report.unrecorded_points_per_s:,.0f} points/s; recording on is "
        f"{ratio:.0%} of it (goal >= 70%)",
        f"  recording cost: {report.recording_ns_per_event:,.0f} ns per event",
    ]


def _render_detection(report: BenchReport) -> list[str]:
    lines = [
        "time to first violation, from run start incl. process start-up, and (past start-up) "
        "from the end of the start-up transient (missed trials count as the budget):",
        f"  {'variant':18} {'mode':50} {'found':>7} {'median':>9} {'max':>9} {'<2s':>5} "
        f"{'past start-up':>13}",
    ]
    by_variant: dict[str, dict[str, Detection]] = {}
    for d in report.detections:
        by_variant.setdefault(d.variant, {})[d.mode] = d
        past = d.median_after_startup_s
        lines.append(
            f"  {d.variant:18} {d.mode:50} {d.found:>3}/{d.trials:<3} {d.median_s:>8.3f}s "
            f"{d.max_s:>8.3f}s {d.under_2s:>5} "
            + (f"{past:>12.3f}s" if past is not None else f"{'-':>13}")
        )
    startups = [s for d in report.detections for s in d.startups_s]
    if startups:
        lines.append(
            f"  start-up: every worker has made its first point {statistics.median(startups):.3f}"
            f" s after run start (median of {len(startups)} trials); a race between the"
            " workers that started first can fire sooner, but rarely"
        )
    lines.append("")
    lines.append("speed-up of the harness over each baseline (ratio of medians):")
    harness_mode = next(iter(_MODES))
    for variant, modes in by_variant.items():
        ours = modes.get(harness_mode)
        if ours is None:
            continue
        for mode, d in modes.items():
            if mode != harness_mode:
                ratio = d.median_s / ours.median_s if ours.median_s > 0 else float("inf")
                lines.append(f"  {variant:18} vs {mode:50} {ratio:6.1f}x")
    return lines


def _render_rates(report: BenchReport) -> list[str]:
    lines = [
        "HEADLINE - steady state: root-cause violations per second past the start-up transient "
        "(all invariants, keep going; ratio to no noise):",
    ]
    for r in report.rates:
        if not any(count for _, count in r.counts):
            lines.append(
                f"  {r.variant:18} no root-cause violation past start-up in any mode "
                f"({', '.join(mode for mode, _ in r.counts)}; {r.seconds:,.1f} s each): no "
                "ratio; this measure says nothing of the target (its race may show only at "
                "rest or in the start-up transient)")
            continue
        bound = ">=" if r.quiet == 0 else ""
        cells = []
        for mode, count in r.counts:
            ratio = "" if mode == r.counts[-1][0] else f" = {bound}{r.ratio(mode):,.1f}x"
            cells.append(f"{mode} {count / r.seconds:,.1f}/s ({count}){ratio}")
        lines.append(f"  {r.variant:18} " + "   ".join(cells))
    return lines
