"""Tiny trackers that break the harness's expectations on purpose (loaded by path)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Invariant, Parameter, Phase, RoleSpec, Setup, Tracker, Workers


class _Counter(Invariant):
    name = "counter-positive"
    summary = "the counter never goes negative"
    fields = ("value",)

    def render(self, fields: Mapping[str, int], workers: Workers,
               params: Mapping[str, int]) -> str:
        return f"counter went to {fields['value']}"


class _Base(Tracker):
    summary: ClassVar[str] = "test tracker"
    variants: ClassVar[Mapping[str, str]] = {"only": "the only variant"}
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "steps": Parameter(50, "steps before misbehaving", minimum=1)
    }
    invariants = (_Counter(),)

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime = setup.runtime
        self.lock = setup.lock("counter")
        self.counter = setup.array("counter", 1)
        self.steps = params["steps"]


class _CrashingRole:
    def __init__(self, tracker: Crashing, index: int) -> None:
        self.t = tracker
        self.n = 0

    def step(self, phase: Phase) -> bool:
        self.n += 1
        with self.t.lock.held("increment"):
            self.t.counter.mv[0] += 1
        if self.n >= self.t.steps:
            raise RuntimeError("worker broke on purpose")
        return True


class Crashing(_Base):
    name: ClassVar[str] = "crashing"
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "worker": RoleSpec(_CrashingRole, "does the thing", count=2)}


class _StubbornRole:
    def __init__(self, tracker: Stubborn, index: int) -> None:
        pass

    def step(self, phase: Phase) -> bool:
        time.sleep(0.01)  # ignores STOP and never reaches a point
        return True


class Stubborn(_Base):
    name: ClassVar[str] = "stubborn"
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "worker": RoleSpec(_StubbornRole, "does the thing", count=2)}


__all__ = ["Crashing", "Stubborn"]
