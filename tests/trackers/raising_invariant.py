"""Trackers whose invariant code raises once a run is under way: malformed plugins
that the sequential probe cannot catch (it never sees the value 4242 a real run reports)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import ClassVar

from shmstress.api import Found, Invariant, Parameter, Phase, RoleSpec, Setup, Tracker, Workers


class _Fragile(Invariant):
    name = "fragile"
    summary = "renders what the probe tries; raises for the value a real run reports"
    fields = ("value",)

    def render(self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]) -> str:
        value = fields["value"]
        if value >= 1000:
            raise KeyError(value)
        return f"value is {value}"


class _Once:
    def __init__(self, tracker: _Base, index: int) -> None:
        self.t = tracker

    def step(self, phase: Phase) -> bool:
        if phase is not Phase.RUN:
            return False
        real = os.getpid() != self.t.coordinator  # a worker of a run, not the probe
        with self.t.lock.held("report"):
            self.t.cell.mv[0] += 1
            if real:
                self.t.cell.mv[1] = 1
        if self.t.report_online and real:
            self.t.runtime.violation("fragile", value=4242)
        return True


class _Base(Tracker):
    summary: ClassVar[str] = "test tracker"
    variants: ClassVar[Mapping[str, str]] = {"only": "the only variant"}
    roles: ClassVar[Mapping[str, RoleSpec]] = {"worker": RoleSpec(_Once, "reports")}
    parameters: ClassVar[Mapping[str, Parameter]] = {}
    invariants: ClassVar[Sequence[Invariant]] = (_Fragile(),)
    report_online: ClassVar[bool] = False

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime = setup.runtime
        self.coordinator = os.getpid()
        self.lock = setup.lock("cell")
        self.cell = setup.array("cell", 2)  # steps taken; 1 once a run's worker took one


class RenderRaises(_Base):
    """A worker reports a violation whose render raises in the coordinator."""

    name: ClassVar[str] = "render-raises"
    report_online: ClassVar[bool] = True


class _FragileAtRest(_Fragile):
    def check_at_rest(self, tracker: _Base) -> list[Found]:
        # after a run's worker took a step, never in the probe (however few steps a busy
        # machine let the run take: a count threshold passed clean under load)
        if tracker.cell.mv[1]:
            raise KeyError("claim-7")
        return []


class FinalRaises(_Base):
    """The at-rest check raises once the workers ran (the probe's quick pass is fine)."""

    name: ClassVar[str] = "final-raises"
    invariants: ClassVar[Sequence[Invariant]] = (_FragileAtRest(),)
