"""PNG charts for the campaign report.

Agg is forced before pyplot is imported so reports render on headless CI machines and
never try to open a window.  Every figure is closed in a ``finally`` so a long nightly
job rendering many reports does not accumulate figures (pyplot keeps them alive).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
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
    for i, (_, xs) in enumerate(row.groups):
        if i % 2 == 1:
            ax.axvspan(xs[0] - 0.6, xs[-1] + 0.6, color="0.95", zorder=0)
    for xpos, stat in zip(row.positions, row.stats, strict=True):
        colour = colours[stat.strategy]
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

    # The same x scale in every row, so spacing means the same thing throughout.
    ax.set_xlim(-0.8, x_max + 0.8)
    crowded = x_max > _CROWDED_X
    ax.set_xticks(
        row.positions,
        [_config_tick_label(s, one_line=crowded) for s in row.stats],
        fontsize=8,
        rotation=90 if crowded else 0,
    )
    ax.set_ylim(-0.04, 1.04)
    ax.set_yticks([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylabel(RATE_LABEL, fontsize=9)
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
    colours = _colour_map([s.strategy for s in stats])
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
    colours = _colour_map([t.config.strategy for t in trials])
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
                label=f"{curve.strategy}: {len(times)} of {curve.trials} ({curve.rate:.0%})",
            )
        ax.set_xlim(left, right)
        _legend_outside(ax, title="strategy: trials that\nfound a violation")
        return _save(fig, out_path)
    finally:
        plt.close(fig)


# --------------------------------------------------------------------- nightly trend


_TREND_DODGE = 0.012
"""Horizontal offset between variants, as a fraction of the axis, so error bars stay apart."""


def _day_numbers(moments: Sequence[datetime]) -> list[float]:
    """Matplotlib's date numbers, which its typed plotting API accepts as plain floats."""
    return [float(x) for x in mdates.date2num(moments)]  # type: ignore[no-untyped-call]


def plot_trend(trials: Sequence[Trial], out_path: Path) -> Path:
    """Failure rate per variant across campaigns, on a time axis of when each campaign started.

    A date axis with automatic ticks keeps sixty nights as readable as two, at a fixed
    size; variants are offset a little so intervals at the same campaign do not overlap.
    """
    campaigns = [info for info in campaign_order(trials) if info.started is not None]
    trend = trend_by_variant(trials, campaigns)
    colours = _colour_map(list(trend))
    started = {info.campaign: info.started for info in campaigns if info.started is not None}

    fig, ax = plt.subplots(figsize=(10.0, 5.2), layout="constrained")
    try:
        ax.set_ylim(-0.03, 1.03)
        ax.set_ylabel(RATE_LABEL)
        ax.set_xlabel("campaign start (UTC)")
        ax.set_title(
            "Failure rate per variant across campaigns (bands and bars: 95% Wilson intervals)",
            loc="left",
        )
        ax.grid(color="0.9")
        ax.set_axisbelow(True)
        if not any(trend.values()):
            _no_data(ax, "no dated campaigns with a verdict")
            return _save(fig, out_path)

        first, last = min(started.values()), max(started.values())
        pad = (last - first) * 0.05 if last > first else timedelta(hours=12)
        dodge = (last - first + 2 * pad) * _TREND_DODGE
        for i, (variant, points) in enumerate(trend.items()):
            offset = dodge * (i - (len(trend) - 1) / 2)
            xs = _day_numbers([started[p.campaign] + offset for p in points])
            rates = [p.rate for p in points]
            colour = colours[variant]
            ax.plot(xs, rates, "o-", color=colour, linewidth=2, label=variant)
            if len(points) > 1:
                ax.fill_between(
                    xs,
                    [p.wilson_low for p in points],
                    [p.wilson_high for p in points],
                    color=colour,
                    alpha=0.12,
                    linewidth=0,
                )
            else:  # a band needs two campaigns; one campaign's interval is a bar
                p = points[0]
                ax.errorbar(
                    xs,
                    rates,
                    yerr=[[p.rate - p.wilson_low], [p.wilson_high - p.rate]],
                    fmt="none",
                    ecolor=colour,
                    capsize=4,
                )
        locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(
            mdates.ConciseDateFormatter(locator)  # type: ignore[no-untyped-call]
        )
        ax.set_xlim(*_day_numbers([first - pad, last + pad]))
        _legend_outside(ax, title="variant")
        return _save(fig, out_path)
    finally:
        plt.close(fig)
