"""Trackers that are malformed on purpose, one mistake each: the harness must name it in one line.

Loaded by path in tests/test_plugins.py (``--tracker tests/trackers/malformed.py:Name``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from shmstress.api import Arena, FoundViolation, Parameter, Phase, Role, Runtime, WorkerInfo
from shmstress.plugin.protocol import idle


class _Positive:
    name = "positive"
    summary = "the counter stays positive"
    fields = ("value",)

    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        return f"counter went to {fields['value']}"


class _Locked:
    """A well-behaved role: every write under the tracker's lock."""

    def __init__(self, tracker: _Valid) -> None:
        self.t = tracker

    def step(self, phase: Phase) -> bool:
        with self.t.lock.held("increment"):
            self.t.counter.mv[0] += 1
        return phase is Phase.RUN


class _Valid:
    name: ClassVar[str] = "valid"
    summary: ClassVar[str] = "a well-formed tracker the malformed ones start from"
    variants: ClassVar[Mapping[str, str]] = {"only": "the only variant"}
    roles: ClassVar[Mapping[str, str]] = {"worker": "increments the counter"}
    default_counts: ClassVar[Mapping[str, int]] = {"worker": 1}
    parameters: ClassVar[Mapping[str, Parameter]] = {}
    invariants: ClassVar[Sequence[object]] = (_Positive(),)

    def __init__(
        self, runtime: Runtime, arena: Arena, variant: str, params: Mapping[str, int]
    ) -> None:
        self.runtime = runtime
        self.lock = runtime.lock("counter")
        self.counter = arena.array("malformed.counter", 1)

    def role(self, name: str, index: int) -> Role:
        return _Locked(self)

    def drained(self) -> bool:
        return True

    def final_violations(self) -> list[FoundViolation]:
        return []


class Valid(_Valid):
    """Control: passes every check."""


class MissingRole(_Valid):
    roles: ClassVar[Mapping[str, str]] = {"worker": "increments", "auditor": "checks"}

    def role(self, name: str, index: int) -> Role:
        if name != "worker":
            raise ValueError(f"no role {name!r}")
        return _Locked(self)


class _RaisingRender(_Positive):
    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        return f"device {fields['device']}"


class RaisingRender(_Valid):
    invariants: ClassVar[Sequence[object]] = (_RaisingRender(),)


class _TwoLines(_Positive):
    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        return "counter broke\nbadly"


class MultiLineRender(_Valid):
    invariants: ClassVar[Sequence[object]] = (_TwoLines(),)


class _WritesFirst(_Locked):
    def step(self, phase: Phase) -> bool:
        self.t.counter.mv[0] += 1  # outside any lock, before any point
        with self.t.lock.held("increment"):
            pass
        return phase is Phase.RUN


class WritesBeforePoint(_Valid):
    def role(self, name: str, index: int) -> Role:
        return _WritesFirst(self)


class _NeverPoints(_Locked):
    def step(self, phase: Phase) -> bool:
        self.t.counter.mv[0] += 1
        return phase is Phase.RUN


class WritesWithoutPoint(_Valid):
    def role(self, name: str, index: int) -> Role:
        return _NeverPoints(self)


class _Waits(_Locked):
    def step(self, phase: Phase) -> bool:
        while True:  # waits for a worker that cannot run while this one does
            with self.t.lock.held("wait for the counter to move"):
                if self.t.counter.mv[0] < 0:
                    return True


class WaitsInsideStep(_Valid):
    def role(self, name: str, index: int) -> Role:
        return _Waits(self)


class _ReportsUnknown(_Locked):
    def step(self, phase: Phase) -> bool:
        with self.t.lock.held("increment"):
            self.t.runtime.violation("made-up", value=1)
        return False


class UndeclaredInvariant(_Valid):
    def role(self, name: str, index: int) -> Role:
        return _ReportsUnknown(self)


class DrainedWrites(_Valid):
    def drained(self) -> bool:
        self.counter.mv[0] = 0
        return True


class ConstructorRaises(_Valid):
    def __init__(
        self, runtime: Runtime, arena: Arena, variant: str, params: Mapping[str, int]
    ) -> None:
        raise RuntimeError("cannot build without a GPU")


class NoVariants(_Valid):
    variants: ClassVar[Mapping[str, str]] = {}


class BadCounts(_Valid):
    default_counts: ClassVar[Mapping[str, int]] = {"nobody": 1}


class _TooManyFields(_Positive):
    fields = tuple(f"f{i}" for i in range(13))


class TooManyFields(_Valid):
    invariants: ClassVar[Sequence[object]] = (_TooManyFields(),)


class _LogsADict(_Locked):
    def step(self, phase: Phase) -> bool:
        with self.t.lock.held("increment", limits={"max": 3}):  # not a field the ring can hold
            self.t.counter.mv[0] += 1
        return phase is Phase.RUN


class UnrecordableField(_Valid):
    def role(self, name: str, index: int) -> Role:
        return _LogsADict(self)


class NoInvariants(_Valid):
    invariants: ClassVar[Sequence[object]] = ()


class NoFinalViolations:
    """Not derived from _Valid: forgets final_violations() entirely."""

    name = "forgetful"
    summary = "no final_violations"
    variants: ClassVar[Mapping[str, str]] = {"only": "x"}
    roles: ClassVar[Mapping[str, str]] = {"worker": "x"}
    default_counts: ClassVar[Mapping[str, int]] = {}
    parameters: ClassVar[Mapping[str, Parameter]] = {}
    invariants: ClassVar[Sequence[object]] = (_Positive(),)

    def __init__(
        self, runtime: Runtime, arena: Arena, variant: str, params: Mapping[str, int]
    ) -> None:
        pass

    def role(self, name: str, index: int) -> Role:
        raise NotImplementedError

    def drained(self) -> bool:
        return True


def not_a_class() -> None:
    """A function where a tracker class was expected."""


class _Spins(_Locked):
    def step(self, phase: Phase) -> bool:
        while self.t.counter.mv[0] >= 0:  # spins without a point: only a time limit stops it
            pass
        return False


class SpinsWithoutPoints(_Valid):
    def role(self, name: str, index: int) -> Role:
        return _Spins(self)


class _Idles(_Locked):
    def step(self, phase: Phase) -> bool:
        return True  # nothing to do, no point made, and never done


class IdlesWithoutPoint(_Valid):
    def role(self, name: str, index: int) -> Role:
        return _Idles(self)


class _ZerosOnly(_Positive):
    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        return ("counter went to zero",)[fields["value"]]  # any other value raises


class RenderRaisesForNonZero(_Valid):
    invariants: ClassVar[Sequence[object]] = (_ZerosOnly(),)


class FinalViolationsRaises(_Valid):
    def final_violations(self) -> list[FoundViolation]:
        raise RuntimeError("lost track of the counter")


ROUNDS = 10


class _TakesTurns(_Locked):
    """Ping-pong with the other worker: act on its own parity of the counter, else poll again.
    A point every step, but no yield while waiting for the other one's turn."""

    def __init__(self, tracker: _Valid, parity: int) -> None:
        super().__init__(tracker)
        self.parity = parity

    yields = False

    def step(self, phase: Phase) -> bool:
        with self.t.lock.held("take a turn"):
            value = int(self.t.counter.mv[0])
            acted = value % 2 == self.parity and value < 2 * ROUNDS
            if acted:
                self.t.counter.mv[0] = value = value + 1
        if value >= 2 * ROUNDS:
            return False
        return acted or not self.yields or idle()


class _TakesTurnsYielding(_TakesTurns):
    yields = True


class SpinsWithoutYield(_Valid):
    """Fine in free mode; under PCT only a priority change hands the turn over, and an
    execution has too few of them for every round."""

    roles: ClassVar[Mapping[str, str]] = {"ping": "takes even turns", "pong": "takes odd turns"}
    default_counts: ClassVar[Mapping[str, int]] = {}

    def role(self, name: str, index: int) -> Role:
        return _TakesTurns(self, 0 if name == "ping" else 1)


class YieldsWhileWaiting(SpinsWithoutYield):
    """Control: the same turns, with a yield while waiting (harness.tracker_api.idle)."""

    def role(self, name: str, index: int) -> Role:
        return _TakesTurnsYielding(self, 0 if name == "ping" else 1)
