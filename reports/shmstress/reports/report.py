"""Build a report (charts, index.html and the failures' bundles) from results.jsonl files.

Read-only with respect to campaign output: a report can be rebuilt at any time, from
any set of result files, without disturbing a campaign that is still appending. It reads
nothing but the results files and the files they name below their own directories
(``files.opened_beneath``), and writes nothing outside ``out_dir``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from shmstress.reports.aggregate import campaign_provenance, group_failures, new_failures
from shmstress.reports.bundles import copy_bundles
from shmstress.reports.html import PlotImage, counted, write_index
from shmstress.reports.plots import (
    plot_coverage,
    plot_failure_rates,
    plot_time_to_detection,
    plot_trend,
)
from shmstress.reports.results import group_by_config, load_results
from shmstress.reports.swimlanes import copy_swimlanes


@dataclass(frozen=True)
class ReportSummary:
    """What build_report produced, so callers (CI, the CLI) can print or attach it."""

    index_html: Path
    plots: tuple[Path, ...]
    paths: tuple[Path, ...]
    n_trials: int
    n_configs: int
    n_failures: int
    n_skipped_lines: int
    warnings: tuple[str, ...]


def describe_report(summary: ReportSummary) -> str:
    """The one line a command prints after writing a report."""
    skipped = (f", {counted(summary.n_skipped_lines, 'line')} skipped"
               if summary.n_skipped_lines else "")
    return (
        f"{counted(summary.n_trials, 'trial')}, {counted(summary.n_configs, 'configuration')}, "
        f"{counted(summary.n_failures, 'distinct failure')}{skipped} -> {summary.index_html}"
    )


def build_report(results_paths: Sequence[Path], out_dir: Path) -> ReportSummary:
    """Load every results file, write the four charts, index.html and the failures' bundles."""
    if isinstance(results_paths, str | Path):
        # A bare path is a Sequence of characters / not a sequence of paths; catch the
        # easy mistake instead of "file not found: '/'".
        results_paths = [Path(results_paths)]
    if not results_paths:
        raise ValueError("build_report needs at least one results file")
    sources = [Path(p) for p in results_paths]
    loaded = load_results(sources)
    trials = loaded.trials
    stats = group_by_config(trials)
    failures = group_failures(trials)

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = [
        PlotImage(
            plot_failure_rates(stats, out_dir / "failure_rate.png"),
            alt="Failure rate per configuration with 95% Wilson intervals, grouped by variant "
            "and worker count",
            caption="Failure rate per configuration. Bars are 95% Wilson score intervals; "
            "k/n is failures over trials with a verdict.",
        ),
        PlotImage(
            plot_time_to_detection(trials, out_dir / "time_to_detection.png"),
            alt="Empirical CDF of time to first violation for each detection strategy",
            caption="Time to detection per strategy, over the trials of the variants that "
            "failed at least once (a correct variant gives a strategy nothing to find). Each "
            "curve levels off at the fraction of that strategy's trials that found a "
            "violation at all; times include worker start-up.",
        ),
        PlotImage(
            plot_coverage(stats, out_dir / "coverage.png"),
            alt="Interleaving coverage per configuration: one dot per trial, the median marked",
            caption="Interleaving coverage per configuration: the distinct conflicting "
            "location pairs (two workers, one object, each order counted) each trial saw. "
            "It tells a run that exercised the races from one that did not, clean or not.",
        ),
        PlotImage(
            plot_trend(trials, out_dir / "trend.png"),
            alt="Failure rate per variant across campaigns, with 95% Wilson bands",
            caption="Nightly trend: failure rate per variant in each campaign, placed at the "
            "campaign's start and pooling the variant's configurations in that campaign "
            "(with one campaign, its variants side by side).",
        ),
    ]
    warnings = list(loaded.warnings)  # and a line for each file a record names, not copied
    bundles = copy_bundles(failures, out_dir, warnings)
    swimlanes = copy_swimlanes(failures, out_dir, warnings)
    index = write_index(
        out_dir,
        trials=trials,
        stats=stats,
        failures=failures,
        plots=plots,
        bundles=bundles,
        swimlanes=swimlanes,
        warnings=warnings,
        sources=sources,
        skipped_lines=loaded.skipped_lines,
        provenance=campaign_provenance(trials),
        new=new_failures(failures, trials),
    )
    plot_paths = tuple(p.path for p in plots)
    return ReportSummary(
        index_html=index,
        plots=plot_paths,
        paths=(index, *plot_paths),
        n_trials=len(trials),
        n_configs=len(stats),
        n_failures=len(failures),
        n_skipped_lines=loaded.skipped_lines,
        warnings=tuple(warnings),
    )
