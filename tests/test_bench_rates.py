"""The steady-state rate headline: a row with no violation in any mode must not read as a ratio."""

from __future__ import annotations

import re

from shmstress.bench.suite import BenchReport, SteadyRate, render_bench

MODES = ("uniform noise (default)", "aimed noise", "no noise")


def _row(variant: str, counts: tuple[int, int, int]) -> SteadyRate:
    return SteadyRate(variant, seconds=15.5, warmup_s=0.25,
                      counts=tuple(zip(MODES, counts, strict=True)))


def test_a_target_with_no_violation_in_any_mode_says_the_measure_covered_nothing() -> None:
    report = BenchReport(rates=[_row("quiet-one", (0, 0, 0)), _row("racy-one", (310, 62, 31))],
                         completed=["rate"])
    lines = render_bench(report).splitlines()
    quiet = next(line for line in lines if "quiet-one" in line)
    racy = next(line for line in lines if "racy-one" in line)
    assert "no root-cause violation past start-up in any mode" in quiet
    assert "no ratio" in quiet
    assert not re.search(r"\d(\.\d+)?x", quiet)  # no ratio, not even a bound
    assert "= 10.0x" in racy and "= 2.0x" in racy


def test_a_quiet_baseline_alone_still_gives_a_lower_bound() -> None:
    report = BenchReport(rates=[_row("rare", (4, 2, 0))], completed=["rate"])
    line = next(line for line in render_bench(report).splitlines() if "rare" in line)
    assert "= >=4.0x" in line and "= >=2.0x" in line
