"""PNG charts for the campaign report.

Agg is forced before pyplot is imported so reports render on headless CI machines and
never try to open a window.  Every figure is closed in a ``finally`` so a long nightly
job rendering many reports does not accumulate figures (pyplot keeps them alive).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from reports.aggregate import campaign_order, trend_by_variant
from reports.results import ConfigStats, Trial

RATE_LABEL = "failure rate (fraction of trials)"
_DPI = 110
_MAX_WIDTH_IN = 60.0
Colour = tuple[float, float, float, float]
_PALETTE: list[Colour] = [plt.get_cmap("tab10")(i) for i in range(10)]


def _colour_map(names: Sequence[str]) -> dict[str, Colour]:
    """Same name, same colour, in every chart of one report."""
    ordered = sorted(set(names))
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(ordered)}


def _save(fig: Figure, out_path: Path) -> Path:
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_path, dpi=_DPI, bbox_inches="tight", format="png")
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


def _config_tick_label(stat: ConfigStats, show_mode: bool, one_line: bool) -> str:
    strategy = f"{stat.mode}/{stat.strategy}" if show_mode and stat.mode else stat.strategy
    separator = " " if one_line else "\n"
    return f"{strategy}{separator}p={stat.noise:g}"


@dataclass
class _Row:
    """One variant's configurations, laid out left to right in worker-count groups."""

    title: str
    stats: list[ConfigStats] = field(default_factory=list)
    positions: list[float] = field(default_factory=list)
    groups: list[tuple[str, list[float]]] = field(default_factory=list)


def _layout_rows(stats: Sequence[ConfigStats]) -> list[_Row]:
    multi_tracker = len({s.tracker for s in stats}) > 1
    ordered = sorted(
        stats, key=lambda s: (s.tracker, s.variant, s.workers, s.strategy, s.noise, s.config_key)
    )
    rows: dict[tuple[str, str], _Row] = {}
    for stat in ordered:
        title = f"{stat.tracker}/{stat.variant}" if multi_tracker else stat.variant
        row = rows.setdefault((stat.tracker, stat.variant), _Row(title))
        workers = f"{stat.workers} worker" + ("" if stat.workers == 1 else "s")
        if not row.groups or row.groups[-1][0] != workers:
            # A wider gap between worker-count groups than between configurations.
            x = row.positions[-1] + 1.8 if row.positions else 0.0
            row.groups.append((workers, []))
        else:
            x = row.positions[-1] + 1.0
        row.groups[-1][1].append(x)
        row.positions.append(x)
        row.stats.append(stat)
    return list(rows.values())


def _draw_row(
    ax: Axes, row: _Row, colours: Mapping[str, Colour], show_mode: bool, x_max: float
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
        [_config_tick_label(s, show_mode, one_line=crowded) for s in row.stats],
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
    show_mode = len({s.mode for s in stats}) > 1
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
            _draw_row(ax, row, colours, show_mode, x_max)
        what = "mode/detection strategy" if show_mode else "detection strategy"
        axes[-1][0].set_xlabel(f"configuration ({what}, noise probability p)")
        handles = [
            Line2D([], [], color=colour, marker="o", linestyle="", label=name)
            for name, colour in colours.items()
        ]
        fig.legend(
            handles=handles,
            title="detection strategy",
            loc="outside lower center",
            ncols=min(len(handles), 6),
            frameon=False,
        )
        return _save(fig, out_path)
    finally:
        plt.close(fig)


# --------------------------------------------------------------------- time to detection


def plot_time_to_detection(trials: Sequence[Trial], out_path: Path) -> Path:
    """Empirical CDF of time to first violation, one curve per detection strategy.

    The denominator is every trial with a verdict, not just the detections, so a curve
    levels off at that strategy's detection rate: a strategy that finds bugs fast but
    rarely must not look better than one that always finds them a little later.
    """
    decided = [t for t in trials if t.outcome != "error"]
    strategies = sorted({t.config.strategy for t in decided})
    # Colours come from every trial, as in the failure-rate chart, so they match across charts.
    colours = _colour_map([t.config.strategy for t in trials])
    times_by_strategy: dict[str, list[float]] = {s: [] for s in strategies}
    totals: dict[str, int] = dict.fromkeys(strategies, 0)
    for trial in decided:
        totals[trial.config.strategy] += 1
        if trial.outcome == "violation" and trial.time_to_violation_s is not None:
            times_by_strategy[trial.config.strategy].append(trial.time_to_violation_s)

    all_times = [t for ts in times_by_strategy.values() for t in ts]
    positive = [t for t in all_times if t > 0]

    fig, ax = plt.subplots(figsize=(9.0, 5.2))
    try:
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("fraction of trials detected")
        ax.set_xlabel("time to first violation (seconds from run start)")
        ax.set_title("Time to detection by strategy (empirical CDF)")
        ax.grid(color="0.9")
        ax.set_axisbelow(True)
        if not positive:
            _no_data(ax, "no violations with a recorded time")
            return _save(fig, out_path)

        lo, hi = min(positive), max(all_times)
        log_scale = hi / lo > 10
        if log_scale:
            ax.set_xscale("log")
            left, right = lo / 1.5, hi * 1.5
        else:
            pad = max((hi - min(all_times)) * 0.05, hi * 0.02)
            left, right = max(0.0, min(all_times) - pad), hi + pad
        for strategy in strategies:
            n = totals[strategy]
            times = sorted(max(t, left) for t in times_by_strategy[strategy])
            ys = [(i + 1) / n for i in range(len(times))]
            ax.step(
                [left, *times, right],
                [0.0, *ys, ys[-1] if ys else 0.0],
                where="post",
                color=colours[strategy],
                linewidth=2,
                label=f"{strategy}: {len(times)} of {n} detected ({len(times) / n:.0%})",
            )
        ax.set_xlim(left, right)
        if log_scale:
            ax.text(
                0.99,
                0.01,
                "log scale",
                transform=ax.transAxes,
                ha="right",
                va="bottom",
                fontsize=8,
                color="0.4",
            )
        _legend_outside(ax, title="detection strategy")
        return _save(fig, out_path)
    finally:
        plt.close(fig)


# --------------------------------------------------------------------- nightly trend


def plot_trend(trials: Sequence[Trial], out_path: Path) -> Path:
    """Failure rate per variant across campaigns, in the order the campaigns ran."""
    campaigns = campaign_order(trials)
    trend = trend_by_variant(trials, campaigns)
    colours = _colour_map(list(trend))
    index = {info.campaign: i for i, info in enumerate(campaigns)}

    width = min(_MAX_WIDTH_IN, max(9.0, 2.5 + 1.1 * len(campaigns)))
    fig, ax = plt.subplots(figsize=(width, 5.2))
    try:
        ax.set_ylim(-0.03, 1.03)
        ax.set_ylabel(RATE_LABEL)
        ax.set_xlabel("campaign (in start order)")
        ax.set_title("Failure rate per variant across campaigns (bands: 95% Wilson intervals)")
        ax.grid(axis="y", color="0.9")
        ax.set_axisbelow(True)
        if not trend:
            _no_data(ax, "no trials with a verdict")
            return _save(fig, out_path)

        for variant, points in trend.items():
            xs = [index[p.campaign] for p in points]
            colour = colours[variant]
            ax.plot(xs, [p.rate for p in points], "o-", color=colour, linewidth=2, label=variant)
            ax.fill_between(
                xs,
                [p.wilson_low for p in points],
                [p.wilson_high for p in points],
                color=colour,
                alpha=0.15,
                linewidth=0,
            )
            if len(points) == 1:
                # A band needs two campaigns; show a single campaign's interval as a bar.
                p = points[0]
                ax.errorbar(
                    xs,
                    [p.rate],
                    yerr=[[p.rate - p.wilson_low], [p.wilson_high - p.rate]],
                    fmt="none",
                    ecolor=colour,
                    capsize=4,
                )
        ax.set_xlim(-0.5, len(campaigns) - 0.5)
        ax.set_xticks(
            range(len(campaigns)),
            [info.campaign for info in campaigns],
            rotation=25,
            ha="right",
            fontsize=8,
        )
        _legend_outside(ax, title="variant")
        return _save(fig, out_path)
    finally:
        plt.close(fig)
