"""PNG charts for the campaign report.

Agg is forced before pyplot is imported so reports render on headless CI machines and
never try to open a window.  Every figure is closed in a ``finally`` so a long nightly
job rendering many reports does not accumulate figures (pyplot keeps them alive).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from shmstress.reports.aggregate import (
    DetectionCurve,
    TrendPoint,
    campaign_order,
    detection_curves,
    failing_variants,
    trend_by_variant,
)
from shmstress.reports.files import replaced
from shmstress.reports.html import counted
from shmstress.reports.results import ConfigStats, Trial, Workers
from shmstress.reports.schema import workers_label

RATE_LABEL = "failure rate (fraction of trials)"
CONTROLLED = "controlled"
_DPI = 110
_MAX_WIDTH_IN = 60.0
Colour = tuple[float, float, float, float]
_PALETTE: list[Colour] = [plt.get_cmap("tab10")(i) for i in range(10)]


def _colour_map(names: Sequence[str]) -> dict[str, Colour]:
    """Same name, same colour, in every chart of one report."""
    ordered = sorted(set(names))
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(ordered)}


def _save(fig: Figure, out_path: Path) -> Path:
    with replaced(out_path) as stream:  # a full disk leaves no half a PNG under the name
        fig.savefig(stream, dpi=_DPI, bbox_inches="tight", format="png")
    return out_path


def _no_data(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")


def _legend_outside(ax: Axes, title: str | None = None) -> None:
    # Outside the axes so it can never hide a curve or an error bar.
    ax.legend(
        loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False, title=title
    )


# --------------------------------------------------------------------- failure rates


_CROWDED_X = 24.0
"""Beyond this many configuration slots per row, tick labels are turned vertical."""


def _config_tick_label(stat: ConfigStats, one_line: bool) -> str:
    """The strategy, then a free run's noise or, as a controlled run has none, its mode."""
    detail = CONTROLLED if stat.mode == CONTROLLED else f"p={stat.noise:g}"
    separator = " " if one_line else "\n"
    return f"{stat.strategy}{separator}{detail}"


@dataclass
class _Row:
    """One variant's configurations, laid out left to right in worker groups."""

    title: str
    stats: list[ConfigStats] = field(default_factory=list)
    positions: list[float] = field(default_factory=list)
    groups: list[tuple[str, list[float]]] = field(default_factory=list)


def _group_titles(stats: Sequence[ConfigStats]) -> dict[tuple[str, str, Workers], str]:
    """``3 workers`` per (tracker, variant, workers); with the role mix too (``3 workers:
    x2 y1``) where a variant ran several mixes of as many workers, lest two groups share it."""
    mixes: dict[tuple[str, str, int], set[Workers]] = {}
    for stat in stats:
        mixes.setdefault((stat.tracker, stat.variant, stat.worker_count), set()).add(stat.workers)
    titles: dict[tuple[str, str, Workers], str] = {}
    for (tracker, variant, count), found in mixes.items():
        for workers in found:
            title = counted(count, "worker")
            titles[tracker, variant, workers] = (
                title if len(found) == 1 else f"{title}: {workers_label(workers)}"
            )
    return titles


def _layout_rows(stats: Sequence[ConfigStats]) -> list[_Row]:
    multi_tracker = len({s.tracker for s in stats}) > 1
    titles = _group_titles(stats)
    ordered = sorted(  # free runs first, then controlled ones
        stats,
        key=lambda s: (
            s.tracker, s.variant, s.worker_count, s.workers, s.mode == CONTROLLED, s.strategy,
            s.noise, s.config_key,
        ),
    )
    rows: dict[tuple[str, str], _Row] = {}
    for stat in ordered:
        title = f"{stat.tracker}/{stat.variant}" if multi_tracker else stat.variant
        row = rows.setdefault((stat.tracker, stat.variant), _Row(title))
        workers = titles[stat.tracker, stat.variant, stat.workers]
        if not row.groups or row.groups[-1][0] != workers:
            # A wider gap between worker groups than between configurations.
            x = row.positions[-1] + 1.8 if row.positions else 0.0
            row.groups.append((workers, []))
        else:
            x = row.positions[-1] + 1.0
        row.groups[-1][1].append(x)
        row.positions.append(x)
        row.stats.append(stat)
    return list(rows.values())


def _draw_row(
    ax: Axes, row: _Row, colours: Mapping[str, Colour], x_max: float
) -> None:
    for xpos, stat in zip(row.positions, row.stats, strict=True):
        colour = colours[stat.drive]
        ax.errorbar(
            [xpos],
            [stat.rate],
            yerr=[[stat.rate - stat.wilson_low], [stat.wilson_high - stat.rate]],
            fmt="o",
            color=colour,
            capsize=4,
            markersize=6,
        )
        above = stat.wilson_high + 0.02
        y_text, va = (above, "bottom") if above < 0.93 else (stat.wilson_low - 0.02, "top")
        ax.text(xpos, y_text, f"{stat.failures}/{stat.trials}", ha="center", va=va, fontsize=8)
    ax.set_ylim(-0.04, 1.04)
    ax.set_yticks([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylabel(RATE_LABEL, fontsize=9)
    _frame_row(ax, row, x_max)


def _frame_row(ax: Axes, row: _Row, x_max: float) -> None:
    """What every row chart shares: worker groups shaded in turn and named on top, the
    configurations' ticks, the variant's title, and one x scale for all rows."""
    for i, (_, xs) in enumerate(row.groups):
        if i % 2 == 1:
            ax.axvspan(xs[0] - 0.6, xs[-1] + 0.6, color="0.95", zorder=0)
    # The same x scale in every row, so spacing means the same thing throughout.
    ax.set_xlim(-0.8, x_max + 0.8)
    crowded = x_max > _CROWDED_X
    ax.set_xticks(
        row.positions,
        [_config_tick_label(s, one_line=crowded) for s in row.stats],
        fontsize=8,
        rotation=90 if crowded else 0,
    )
    ax.grid(axis="y", color="0.9")
    ax.set_axisbelow(True)
    ax.set_title(row.title, loc="left", fontweight="bold", fontsize=11, pad=20)

    top = ax.twiny()
    top.set_xlim(ax.get_xlim())
    top.set_xticks([(xs[0] + xs[-1]) / 2 for _, xs in row.groups], [n for n, _ in row.groups])
    top.tick_params(axis="x", length=0, labelsize=9, pad=2)


def plot_failure_rates(stats: Sequence[ConfigStats], out_path: Path) -> Path:
    """Failure rate per configuration with 95% Wilson intervals, grouped by variant and workers.

    One row per variant keeps a large grid readable at page width instead of one endless
    strip.  Each marker is a configuration and its bar the Wilson interval; the k/n next
    to it is there because "0.5" from 2 trials and from 200 trials mean different things.
    """
    rows = _layout_rows(stats)
    colours = _colour_map([s.drive for s in stats])  # as the detection chart's curves
    x_max = max((row.positions[-1] for row in rows), default=0.0)
    width = min(_MAX_WIDTH_IN, max(8.0, 2.8 + 0.75 * (x_max + 1)))
    row_height = 4.3 if x_max > _CROWDED_X else 3.3
    height = 1.0 + row_height * max(1, len(rows))

    fig, axes = plt.subplots(
        max(1, len(rows)), 1, figsize=(width, height), squeeze=False, layout="constrained"
    )
    try:
        fig.suptitle(
            "Failure rate per configuration (95% Wilson intervals; k/n = failures/trials)",
            fontsize=12,
        )
        if not rows:
            ax = axes[0][0]
            _no_data(ax, "no trials")
            ax.set_ylim(-0.04, 1.04)
            ax.set_ylabel(RATE_LABEL)
            ax.set_xticks([])
            return _save(fig, out_path)
        for ax, row in zip((a[0] for a in axes), rows, strict=True):
            _draw_row(ax, row, colours, x_max)
        axes[-1][0].set_xlabel(
            "configuration: strategy, then the noise probability p of a free run "
            "(workers in parallel) or controlled (one worker at a time)"
        )
        handles = [
            Line2D([], [], color=colour, marker="o", linestyle="", label=name)
            for name, colour in colours.items()
        ]
        fig.legend(
            handles=handles,
            title="strategy",
            loc="outside lower center",
            ncols=min(len(handles), 6),
            frameon=False,
        )
        return _save(fig, out_path)
    finally:
        plt.close(fig)


# --------------------------------------------------------------------- interleaving coverage


COVERAGE_LABEL = "interleaving coverage\n(conflicting pairs)"


def _draw_coverage_row(
    ax: Axes, row: _Row, colours: Mapping[str, Colour], x_max: float, y_max: float
) -> None:
    for xpos, stat in zip(row.positions, row.stats, strict=True):
        colour = colours[stat.drive]
        values = sorted(stat.coverages)
        # spread a configuration's trials a little sideways, in a fixed order, so equal
        # values stay visible as several dots and the chart is the same on every rebuild
        offsets = [0.0] if len(values) == 1 else [
            -0.25 + 0.5 * i / (len(values) - 1) for i in range(len(values))]
        ax.scatter([xpos + o for o in offsets], values, s=12, color=colour, alpha=0.55,
                   linewidths=0)
        median = stat.median_coverage
        if median is not None:
            ax.hlines(median, xpos - 0.35, xpos + 0.35, color=colour, linewidth=2.5)
            ax.text(xpos, max(values) + 0.03 * y_max, f"{median:g}", ha="center",
                    va="bottom", fontsize=8)
    ax.set_ylim(0, y_max * 1.15)
    ax.set_ylabel(COVERAGE_LABEL, fontsize=9)
    _frame_row(ax, row, x_max)


def plot_coverage(stats: Sequence[ConfigStats], out_path: Path) -> Path:
    """Interleaving coverage per configuration: a dot per trial, a bar at the median.

    It is how a reader tells configurations that exercised the races from those that did
    not, clean or not: a correct variant that stays clean at high coverage says more than
    one that stays clean at low coverage. Laid out as the failure-rate chart (a row per
    variant, worker groups, the same colours), with every row on one y scale; only the
    configurations whose trials recorded coverage (free runs) are drawn.
    """
    covered = [s for s in stats if s.coverages]
    rows = _layout_rows(covered)
    colours = _colour_map([s.drive for s in stats])  # as the failure-rate chart's
    x_max = max((row.positions[-1] for row in rows), default=0.0)
    y_max = float(max((max(s.coverages) for s in covered), default=1)) or 1.0
    width = min(_MAX_WIDTH_IN, max(8.0, 2.8 + 0.75 * (x_max + 1)))
    row_height = 4.3 if x_max > _CROWDED_X else 3.3
    fig, axes = plt.subplots(max(1, len(rows)), 1, figsize=(width, 1.0 + row_height * max(
        1, len(rows))), squeeze=False, layout="constrained")
    try:
        fig.suptitle("Interleaving coverage per configuration (distinct conflicting location "
                     "pairs per trial; bar and number: the median)", fontsize=12)
        if not rows:
            ax = axes[0][0]
            _no_data(ax, "no trial recorded interleaving coverage")
            ax.set_ylabel(COVERAGE_LABEL)
            ax.set_xticks([])
            return _save(fig, out_path)
        for ax, row in zip((a[0] for a in axes), rows, strict=True):
            _draw_coverage_row(ax, row, colours, x_max, y_max)
        axes[-1][0].set_xlabel("configuration: strategy, then the noise probability p")
        return _save(fig, out_path)
    finally:
        plt.close(fig)


# --------------------------------------------------------------------- time to detection


_LOG_SPREAD = 20.0
"""Detection times spread wider than this factor get a log axis, or the fast ones vanish."""


def plot_time_to_detection(trials: Sequence[Trial], out_path: Path) -> Path:
    """Empirical CDF of time to first violation, one curve per strategy (``detection_curves``).

    Each curve levels off at the strategy's detection rate over the variants that failed
    at least once, which the plot names under its title.
    """
    failing = failing_variants(trials)
    curves = detection_curves(trials, failing)
    # Colours come from every trial, as in the failure-rate chart, so they match across charts.
    colours = _colour_map([t.config.drive for t in trials])
    all_times = [t for curve in curves for t in curve.times]
    positive = [t for t in all_times if t > 0]
    log_scale = bool(positive) and max(positive) / min(positive) > _LOG_SPREAD

    fig, ax = plt.subplots(figsize=(10.0, 5.4), layout="constrained")
    try:
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("fraction of trials that found a violation")
        ax.set_xlabel(
            "seconds from run start (worker start-up included) to the first violation"
            + (" \u2014 log scale" if log_scale else "")
        )
        ax.set_title("Time to detection per strategy (empirical CDF)", loc="left", pad=20)
        ax.grid(color="0.9")
        ax.set_axisbelow(True)
        if not positive:
            _no_data(ax, "no violations with a recorded time")
            return _save(fig, out_path)
        variants = ", ".join(failing[:4]) + (
            f" and {len(failing) - 4} more" if len(failing) > 4 else ""
        )
        ax.text(
            0.0, 1.015, f"over the trials of the variants that failed at least once: {variants}",
            transform=ax.transAxes, fontsize=9, color="0.35", va="bottom",
        )
        hi = max(all_times)
        if log_scale:
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            left, right = min(positive) / 1.5, hi * 1.5
        else:
            left, right = 0.0, hi * 1.05
        for curve in curves:
            times = [max(t, left) for t in curve.times]
            ys = [(i + 1) / curve.trials for i in range(len(times))]
            ax.step(
                [left, *times, right],
                [0.0, *ys, ys[-1] if ys else 0.0],
                where="post",
                color=colours[curve.strategy],
                linewidth=2,
                label=_curve_label(curve),
            )
        ax.set_xlim(left, right)
        _legend_outside(ax, title="strategy: trials that\nfound a violation")
        return _save(fig, out_path)
    finally:
        plt.close(fig)


def _curve_label(curve: DetectionCurve) -> str:
    """``free p=0.1: 3 of 3 (100%)``: every detection, as the table and the failure-rate
    chart count them; detections without a recorded time (which the curve cannot place)
    are said, not left out."""
    untimed = curve.detections - len(curve.times)
    return (f"{curve.strategy}: {curve.detections} of {curve.trials} ({curve.rate:.0%})"
            + (f", {untimed} without a time" if untimed else ""))


# --------------------------------------------------------------------- nightly trend


@dataclass(frozen=True)
class TrendSeries:
    """One variant's line: its campaigns' rates at ``xs``; a band when it has two or more,
    else one bar (a band needs two points)."""

    variant: str
    xs: tuple[float, ...]
    points: tuple[TrendPoint, ...]

    @property
    def band(self) -> bool:
        return len(self.points) > 1


@dataclass(frozen=True)
class TrendLayout:
    """What the trend chart draws, decided apart from drawing it (and tested so).

    Several campaigns go on a date axis, each point exactly at its campaign's start: no
    sideways offset, which on a time axis would read as another time. One campaign has no
    time to spread over, so its variants stand side by side as categories (``ticks``),
    and the axis label names the campaign and when it started, in UTC.
    """

    dated: bool
    series: tuple[TrendSeries, ...]
    xlim: tuple[float, float]
    ticks: tuple[tuple[float, str], ...]
    title: str
    xlabel: str


def _trend_title(series: Sequence[TrendSeries], one: str | None) -> str:
    """The title names only the interval marks that are drawn."""
    marks = [name for name, drawn in (("bands", any(s.band for s in series)),
                                      ("bars", any(not s.band for s in series))) if drawn]
    where = f"in campaign {one}" if one else "across campaigns"
    intervals = f" ({' and '.join(marks)}: 95% Wilson intervals)" if marks else ""
    return f"Failure rate per variant {where}{intervals}"


def trend_layout(trials: Sequence[Trial]) -> TrendLayout:
    """The trend chart's data: its series, axis and title (see ``TrendLayout``)."""
    campaigns = [info for info in campaign_order(trials) if info.started is not None]
    trend = {variant: points for variant, points in trend_by_variant(trials, campaigns).items()
             if points}
    started = {info.campaign: info.started for info in campaigns if info.started is not None}
    dated_campaigns = {p.campaign for points in trend.values() for p in points}
    if len(dated_campaigns) <= 1:
        (only,) = dated_campaigns or {""}
        series = tuple(TrendSeries(variant, (float(i),), tuple(points))
                       for i, (variant, points) in enumerate(trend.items()))
        moment = started.get(only)
        when = f", started {moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC" if moment else ""
        return TrendLayout(
            dated=False, series=series, xlim=(-0.6, max(len(series) - 0.4, 0.6)),
            ticks=tuple((s.xs[0], s.variant) for s in series),
            title=_trend_title(series, only or None),
            xlabel=f"variant (one campaign: {only}{when})" if only else "variant",
        )
    series = tuple(
        TrendSeries(variant, tuple(_day_numbers([started[p.campaign] for p in points])),
                    tuple(points))
        for variant, points in trend.items()
    )
    moments = [started[c] for c in dated_campaigns]
    first, last = min(moments), max(moments)
    pad = (last - first) * 0.05
    low, high = _day_numbers([first - pad, last + pad])
    return TrendLayout(dated=True, series=series, xlim=(low, high), ticks=(),
                       title=_trend_title(series, None), xlabel="campaign start (UTC)")


def _day_numbers(moments: Sequence[datetime]) -> list[float]:
    """Matplotlib's date numbers, which its typed plotting API accepts as plain floats."""
    return [float(x) for x in mdates.date2num(moments)]  # type: ignore[no-untyped-call]


def plot_trend(trials: Sequence[Trial], out_path: Path) -> Path:
    """Failure rate per variant across campaigns, on a time axis of when each campaign started
    (``trend_layout``): a date axis with automatic ticks keeps thirty nights as readable as
    two, at a fixed size; a single campaign shows its variants side by side instead."""
    layout = trend_layout(trials)
    colours = _colour_map([s.variant for s in layout.series])

    fig, ax = plt.subplots(figsize=(10.0, 5.2), layout="constrained")
    try:
        ax.set_ylim(-0.03, 1.03)
        ax.set_ylabel(RATE_LABEL)
        ax.set_xlabel(layout.xlabel)
        ax.set_title(layout.title, loc="left")
        ax.grid(color="0.9")
        ax.set_axisbelow(True)
        if not layout.series:
            _no_data(ax, "no dated campaigns with a verdict")
            return _save(fig, out_path)
        for line in layout.series:
            colour = colours[line.variant]
            rates = [p.rate for p in line.points]
            ax.plot(line.xs, rates, "o-", color=colour, linewidth=2, label=line.variant)
            if line.band:
                ax.fill_between(
                    line.xs,
                    [p.wilson_low for p in line.points],
                    [p.wilson_high for p in line.points],
                    color=colour,
                    alpha=0.12,
                    linewidth=0,
                )
            else:  # one campaign's interval is a bar
                p = line.points[0]
                ax.errorbar(
                    line.xs,
                    rates,
                    yerr=[[p.rate - p.wilson_low], [p.wilson_high - p.rate]],
                    fmt="none",
                    ecolor=colour,
                    capsize=4,
                )
        if layout.dated:
            locator = mdates.AutoDateLocator(tz=UTC)  # type: ignore[no-untyped-call]
            ax.xaxis.set_major_locator(locator)
            ax.xaxis.set_major_formatter(
                mdates.ConciseDateFormatter(locator, tz=UTC)  # type: ignore[no-untyped-call]
            )
        else:
            ax.set_xticks([x for x, _ in layout.ticks], [name for _, name in layout.ticks])
        ax.set_xlim(*layout.xlim)
        _legend_outside(ax, title="variant")
        return _save(fig, out_path)
    finally:
        plt.close(fig)
