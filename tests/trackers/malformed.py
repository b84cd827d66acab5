"""Trackers that are malformed on purpose, one mistake each: the harness must name it in one line.

Loaded by path in tests/test_plugins.py (``--tracker tests/trackers/malformed.py:Name``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from shmstress.api import (
    Found,
    Invariant,
    Parameter,
    Phase,
    RoleSpec,
    Scope,
    Setup,
    Tracker,
    Workers,
)


class _Positive(Invariant):
    name = "positive"
    summary = "the counter stays positive"
    fields = ("value",)

    def render(self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]) -> str:
        return f"counter went to {fields['value']}"


class _Locked:
    """A well-behaved role: every write under the tracker's lock."""

    def __init__(self, tracker: _Valid, index: int = 0) -> None:
        self.t = tracker

    def step(self, phase: Phase) -> bool:
        with self.t.lock.held("increment"):
            self.t.counter.mv[0] += 1
        return phase is Phase.RUN


class _Valid(Tracker):
    name: ClassVar[str] = "valid"
    summary: ClassVar[str] = "a well-formed tracker the malformed ones start from"
    variants: ClassVar[Mapping[str, str]] = {"only": "the only variant"}
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "worker": RoleSpec(_Locked, "increments the counter")}
    parameters: ClassVar[Mapping[str, Parameter]] = {}
    invariants: ClassVar[Sequence[Invariant]] = (_Positive(),)

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime = setup.runtime
        self.lock = setup.lock("counter")
        self.counter = setup.array("malformed.counter", 1)


def _role(build: Callable[..., object], help_text: str = "increments the counter"
          ) -> Mapping[str, RoleSpec]:
    return {"worker": RoleSpec(build, help_text)}


class Valid(_Valid):
    """Control: passes every check."""


def _no_auditor(tracker: _Valid, index: int) -> _Locked:
    raise ValueError("no auditor here")


class MissingRole(_Valid):
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "worker": RoleSpec(_Locked, "increments"), "auditor": RoleSpec(_no_auditor, "checks")}


class _RaisingRender(_Positive):
    def render(self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]) -> str:
        return f"device {fields['device']}"


class RaisingRender(_Valid):
    invariants: ClassVar[Sequence[Invariant]] = (_RaisingRender(),)


class _TwoLines(_Positive):
    def render(self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]) -> str:
        return "counter broke\nbadly"


class MultiLineRender(_Valid):
    invariants: ClassVar[Sequence[Invariant]] = (_TwoLines(),)


class _WritesFirst(_Locked):
    def step(self, phase: Phase) -> bool:
        self.t.counter.mv[0] += 1  # outside any lock, before any point
        with self.t.lock.held("increment"):
            pass
        return phase is Phase.RUN


class WritesBeforePoint(_Valid):
    roles: ClassVar[Mapping[str, RoleSpec]] = _role(_WritesFirst)


class _NeverPoints(_Locked):
    def step(self, phase: Phase) -> bool:
        self.t.counter.mv[0] += 1
        return phase is Phase.RUN


class WritesWithoutPoint(_Valid):
    roles: ClassVar[Mapping[str, RoleSpec]] = _role(_NeverPoints)


class _Waits(_Locked):
    def step(self, phase: Phase) -> bool:
        while True:  # waits for a worker that cannot run while this one does
            with self.t.lock.held("wait for the counter to move"):
                if self.t.counter.mv[0] < 0:
                    return True


class WaitsInsideStep(_Valid):
    roles: ClassVar[Mapping[str, RoleSpec]] = _role(_Waits)


class _ReportsUnknown(_Locked):
    def step(self, phase: Phase) -> bool:
        with self.t.lock.held("increment"):
            self.t.runtime.violation("made-up", value=1)
        return False


class UndeclaredInvariant(_Valid):
    roles: ClassVar[Mapping[str, RoleSpec]] = _role(_ReportsUnknown)


class DrainedWrites(_Valid):
    def drained(self) -> bool:
        self.counter.mv[0] = 0
        return True


class ConstructorRaises(_Valid):
    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        raise RuntimeError("cannot build without a GPU")


class NoVariants(_Valid):
    variants: ClassVar[Mapping[str, str]] = {}


class BadStopOrder(_Valid):
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "worker": RoleSpec(_Locked, "increments the counter", stops_after=("nobody",))}


class StopsInACircle(_Valid):
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "ping": RoleSpec(_Locked, "increments", stops_after=("pong",)),
        "pong": RoleSpec(_Locked, "increments", stops_after=("ping",))}


class _TooManyFields(_Positive):
    fields = tuple(f"f{i}" for i in range(13))


class TooManyFields(_Valid):
    invariants: ClassVar[Sequence[Invariant]] = (_TooManyFields(),)


class _LogsADict(_Locked):
    def step(self, phase: Phase) -> bool:
        with self.t.lock.held("increment", limits={"max": 3}):  # not a field the ring can hold
            self.t.counter.mv[0] += 1
        return phase is Phase.RUN


class UnrecordableField(_Valid):
    roles: ClassVar[Mapping[str, RoleSpec]] = _role(_LogsADict)


class NoInvariants(_Valid):
    invariants: ClassVar[Sequence[Invariant]] = ()


class NotATracker:
    """Not derived from shmstress.api.Tracker: the harness says so."""

    name = "stranger"


def not_a_class() -> None:
    """A function where a tracker class was expected."""


class _Spins(_Locked):
    def step(self, phase: Phase) -> bool:
        while self.t.counter.mv[0] >= 0:  # spins without a point: only a time limit stops it
            pass
        return False


class SpinsWithoutPoints(_Valid):
    roles: ClassVar[Mapping[str, RoleSpec]] = _role(_Spins)


class _Idles(_Locked):
    def step(self, phase: Phase) -> bool:
        return True  # nothing to do, no point made, and never done


class IdlesWithoutPoint(_Valid):
    roles: ClassVar[Mapping[str, RoleSpec]] = _role(_Idles)


class _ZerosOnly(_Positive):
    def render(self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]) -> str:
        return ("counter went to zero",)[fields["value"]]  # any other value raises


class RenderRaisesForNonZero(_Valid):
    invariants: ClassVar[Sequence[Invariant]] = (_ZerosOnly(),)


class _LosesTrack(_Positive):
    def check_at_rest(self, tracker: _Valid) -> list[Found]:
        raise RuntimeError("lost track of the counter")


class CheckAtRestRaises(_Valid):
    invariants: ClassVar[Sequence[Invariant]] = (_LosesTrack(),)


class _ScopeRaises(_Positive):
    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        return Scope(subjects=(("counter", fields["counter"]),))


class ScopeRaises(_Valid):
    invariants: ClassVar[Sequence[Invariant]] = (_ScopeRaises(),)


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
        return acted or not self.yields or self.t.runtime.idle()


class _TakesTurnsYielding(_TakesTurns):
    yields = True


class SpinsWithoutYield(_Valid):
    """Fine in free mode; under PCT only a priority change hands the turn over, and an
    execution has too few of them for every round."""

    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "ping": RoleSpec(lambda t, i: _TakesTurns(t, 0), "takes even turns"),
        "pong": RoleSpec(lambda t, i: _TakesTurns(t, 1), "takes odd turns")}


class YieldsWhileWaiting(SpinsWithoutYield):
    """Control: the same turns, with a yield while waiting (``runtime.idle()``)."""

    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "ping": RoleSpec(lambda t, i: _TakesTurnsYielding(t, 0), "takes even turns"),
        "pong": RoleSpec(lambda t, i: _TakesTurnsYielding(t, 1), "takes odd turns")}


class _NotesGhostFirst(_Locked):
    def step(self, phase: Phase) -> bool:
        self.t.ghost_count.mv[0] += 1  # oracle bookkeeping: no point needed
        with self.t.lock.held("increment"):
            self.t.counter.mv[0] += 1
        return phase is Phase.RUN


class WritesGhostBeforePoint(_Valid):
    """Control: a write to a ghost array before the first point is not the system's state."""

    roles: ClassVar[Mapping[str, RoleSpec]] = _role(_NotesGhostFirst)

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        super().__init__(setup, variant, params)
        self.ghost_count = setup.ghost.array("malformed.count", 1)
