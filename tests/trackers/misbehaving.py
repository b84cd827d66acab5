"""Tiny trackers that break the harness's expectations on purpose (loaded by path)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Arena, FoundViolation, Parameter, Phase, Role, Runtime, WorkerInfo


class _Counter:
    name = "counter-positive"
    summary = "the counter never goes negative"
    fields = ("value",)

    def render(self, fields: Mapping[str, int], workers: object, params: object) -> str:
        return f"counter went to {fields['value']}"


class _Base:
    summary: ClassVar[str] = "test tracker"
    variants: ClassVar[Mapping[str, str]] = {"only": "the only variant"}
    roles: ClassVar[Mapping[str, str]] = {"worker": "does the thing"}
    default_counts: ClassVar[Mapping[str, int]] = {"worker": 2}
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "steps": Parameter(50, "steps before misbehaving", minimum=1)
    }
    invariants = (_Counter(),)

    def __init__(
        self, runtime: Runtime, arena: Arena, variant: str, params: Mapping[str, int]
    ) -> None:
        self.runtime = runtime
        self.lock = runtime.lock("counter")
        self.counter = arena.array("counter", 1)
        self.steps = params["steps"]

    def drained(self) -> bool:
        return True

    def final_violations(self) -> list[FoundViolation]:
        return []


class _CrashingRole:
    def __init__(self, tracker: Crashing) -> None:
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

    def role(self, name: str, index: int) -> Role:
        return _CrashingRole(self)


class _StubbornRole:
    def step(self, phase: Phase) -> bool:
        time.sleep(0.01)  # ignores STOP and never reaches a point
        return True


class Stubborn(_Base):
    name: ClassVar[str] = "stubborn"

    def role(self, name: str, index: int) -> Role:
        return _StubbornRole()


__all__ = ["Crashing", "Stubborn", "WorkerInfo"]
