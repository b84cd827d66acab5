"""Counted nouns and sizes in the text the harness prints, light enough for any module."""

from __future__ import annotations

import math


def counted(n: int, noun: str) -> str:
    """``1 trial``, ``2 trials``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def sized(nbytes: int) -> str:
    """``512 bytes``, ``1.5 MiB``: a size in the largest binary unit it has one of."""
    value = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:,.0f} {unit}" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} TiB"


def rate(per_s: float, unit: str) -> str:
    """``1,234 points/s``, ``31.4 executions/s``, ``0.125 executions/s``: three significant
    digits, never fewer than the whole number, so a slow run is not "0 executions/s"."""
    if per_s <= 0 or not math.isfinite(per_s):
        return f"{per_s:g} {unit}/s"
    decimals = max(0, 2 - math.floor(math.log10(per_s)))
    return f"{per_s:,.{decimals}f} {unit}/s"
