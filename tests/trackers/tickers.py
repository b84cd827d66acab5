"""A tracker whose workers only make points: no lock, no yield, no shared state. Every
unfinished worker is runnable at every step, so random walk picks each of them with
probability 1/k at every step, whether it is asked step by step or draws scripts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Invariant, Parameter, Phase, RoleSpec, Setup, Tracker, Workers


class _Never(Invariant):
    name = "never"
    summary = "never broken"

    def render(self, fields: Mapping[str, int], workers: Workers,
               params: Mapping[str, int]) -> str:
        return "broken"


class _Ticker:
    """Makes ``ticks`` points, in any phase, then finishes."""

    def __init__(self, tracker: Tickers, index: int) -> None:
        self.t = tracker
        self.left = tracker.ticks

    def step(self, phase: Phase) -> bool:
        if self.left == 0:
            return False
        self.left -= 1
        self.t.runtime.point("tick")
        return True


class Tickers(Tracker):
    name: ClassVar[str] = "tickers"
    summary: ClassVar[str] = "workers that only make points"
    variants: ClassVar[Mapping[str, str]] = {"only": "the only variant"}
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "ticker": RoleSpec(_Ticker, "makes points, then finishes")}
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "ticks": Parameter(100, "points each worker makes", minimum=1)}
    invariants: ClassVar[tuple[Invariant, ...]] = (_Never(),)

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime = setup.runtime
        self.ticks = params["ticks"]
