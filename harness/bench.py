"""``shmstress bench``: the figures DESIGN §8 asks for, measured as ratios within one run.

Timing goals live here, not in tests: the machines are shared and noisy, so
every figure is printed next to the baseline measured in the same run.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from harness.config import RunConfig
from harness.controlled.bench import ControlledBench, render_controlled_bench, run_controlled_bench
from harness.noise import NoiseConfig
from harness.runner import run

RACY_DRA = ("gather-unchecked", "events-unordered", "original")
CORRECT_DRA = ("fixed", "single-lock")


@dataclass(frozen=True)
class BenchOptions:
    trials: int = 20
    budget_s: float = 5.0
    free_seconds: float = 3.0
    clean_points: int = 1_000_000
    noise: float = 0.1
    seed: int = 0
    variants: tuple[str, ...] | None = None
    sections: tuple[str, ...] = ("free", "detection", "clean", "controlled")


@dataclass(frozen=True)
class Detection:
    """Time to first violation over trials of one variant in one mode (from run start)."""

    variant: str
    mode: str
    trials: int
    found: int
    median_s: float
    max_s: float
    under_2s: int
    times_s: tuple[float, ...] = ()


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
    detections: list[Detection] = field(default_factory=list)
    clean: list[CleanRun] = field(default_factory=list)
    controlled: ControlledBench | None = None


_MODES: dict[str, tuple[bool, tuple[str, ...] | None]] = {
    # mode name: (noise on?, invariants checked)
    "harness (noise, all invariants)": (True, None),
    "no noise, all invariants": (False, None),
    "rerun baseline (no noise, double allocation only)": (False, ("no-double-allocation",)),
}


def run_bench(options: BenchOptions, log: Callable[[str], None]) -> BenchReport:
    report = BenchReport()
    base = RunConfig(tracker="dra", noise=NoiseConfig(options.noise), seed=options.seed)

    if "free" in options.sections:
        _free_mode(options, base, report, log)
    for variant in (options.variants or RACY_DRA) if "detection" in options.sections else ():
        for mode, (noisy, checks) in _MODES.items():
            log(f"detection: {variant}, {mode}, {options.trials} trials")
            times = []
            for trial in range(options.trials):
                config = replace(
                    base,
                    variant=variant,
                    duration=options.budget_s,
                    seed=options.seed + trial,
                    noise=NoiseConfig(options.noise if noisy else 0.0),
                    checks=checks,
                )
                result = run(config)
                first = result.first_violation
                if first is not None and first.elapsed_s is not None:
                    times.append(first.elapsed_s)
            censored = times + [options.budget_s] * (options.trials - len(times))
            report.detections.append(
                Detection(
                    variant=variant,
                    mode=mode,
                    trials=options.trials,
                    found=len(times),
                    median_s=statistics.median(censored),
                    max_s=max(censored),
                    under_2s=sum(t < 2.0 for t in times),
                    times_s=tuple(times),
                )
            )

    for variant in CORRECT_DRA if "clean" in options.sections else ():
        log(f"clean: {variant}, {options.clean_points:,} points")
        result = run(
            replace(
                base,
                variant=variant,
                duration=max(60.0, options.clean_points / 20_000),
                max_points=options.clean_points,
                stop_on_first=False,
            )
        )
        report.clean.append(
            CleanRun(variant, result.points, result.violation_count, result.elapsed_s,
                     result.exit_reason.value)
        )
    if "controlled" in options.sections:
        report.controlled = run_controlled_bench(min(options.trials, 10), options.seed, log)
    return report


def _free_mode(
    options: BenchOptions, base: RunConfig, report: BenchReport, log: Callable[[str], None]
) -> None:
    """Points/s with recording on and off in one run, and the cost per event.

    The runs go on, off, off, on, so that a machine getting busier or quieter
    during the bench weighs on both sides alike.
    """
    from harness.bench_recording import recording_ns_per_event

    log(f"free mode: fixed variant, 4 x {options.free_seconds:g} s, recording on/off/off/on")
    totals = {True: [0, 0.0], False: [0, 0.0]}
    for record in (True, False, False, True):
        result = run(replace(base, variant="fixed", duration=options.free_seconds,
                             record=record))
        totals[record][0] += result.points
        totals[record][1] += result.elapsed_s
    report.free_points = int(totals[True][0])
    report.free_points_per_s = totals[True][0] / totals[True][1]
    report.unrecorded_points_per_s = totals[False][0] / totals[False][1]
    log("recording cost per event")
    report.recording_ns_per_event = recording_ns_per_event()


def render_bench(report: BenchReport) -> str:
    ratio = (report.free_points_per_s / report.unrecorded_points_per_s
             if report.unrecorded_points_per_s else 0.0)
    lines = [
        f"free mode (fixed, recording on): {report.free_points_per_s:,.0f} points/s "
        f"({report.free_points:,} points)",
        f"  recording off: {report.unrecorded_points_per_s:,.0f} points/s; recording on is "
        f"{ratio:.0%} of it (goal >= 70%)",
        f"  recording cost: {report.recording_ns_per_event:,.0f} ns per event",
        "",
        "time to first violation, from run start incl. process start-up "
        "(missed trials count as the budget):",
        f"  {'variant':18} {'mode':50} {'found':>7} {'median':>9} {'max':>9} {'<2s':>5}",
    ]
    by_variant: dict[str, dict[str, Detection]] = {}
    for d in report.detections:
        by_variant.setdefault(d.variant, {})[d.mode] = d
        lines.append(
            f"  {d.variant:18} {d.mode:50} {d.found:>3}/{d.trials:<3} {d.median_s:>8.3f}s "
            f"{d.max_s:>8.3f}s {d.under_2s:>5}"
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
    lines.append("")
    lines.append("correct variants (keep counting):")
    for c in report.clean:
        lines.append(
            f"  {c.variant:18} {c.points:>12,} points in {c.elapsed_s:6.1f} s: "
            f"{c.violations} violations ({c.exit_reason})"
        )
    if report.controlled is not None:
        lines += ["", *render_controlled_bench(report.controlled)]
    return "\n".join(lines)
