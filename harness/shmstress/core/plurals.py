"""Counted nouns in the text the harness prints, kept light so any module may import it."""

from __future__ import annotations


def counted(n: int, noun: str) -> str:
    """``1 trial``, ``2 trials``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
