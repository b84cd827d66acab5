"""What a tracker is: one class, declared with a few class attributes, built once per run.

A tracker subclasses ``Tracker`` (as a Hypothesis state machine subclasses
``RuleBasedStateMachine``): its class attributes say what the harness can run
(variants, roles, parameters, invariants, named scenarios), ``__init__`` builds
its shared state from a ``Setup`` before any worker is forked, and each worker
then runs one role's ``step(phase)`` in a loop, reaching the harness through
the ``Runtime`` its steps were given. ``shmstress.plugin.check`` validates a
class against this before any worker starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from shmstress.core.control import Phase
from shmstress.core.workers import Workers
from shmstress.plugin.setup import Setup
from shmstress.plugin.words import Scope, Words


class Role(Protocol):
    """The loop body of one worker process."""

    def step(self, phase: Phase) -> bool:
        """Do one unit of work; return False once there is nothing left to do in this phase."""
        ...


@dataclass(frozen=True)
class RoleSpec:
    """One role of a tracker: how to build its object in a worker, and how it is run.

    ``build(tracker, index)`` is called inside each worker of the role (``index``
    numbers the role's workers from 0). ``count`` workers run it unless the user
    says otherwise (``--workers role=N``); a default campaign tries each of
    ``grid`` (default: just ``count``). The harness holds STOP back from this
    role, which keeps seeing DRAIN, until every worker of each role in
    ``stops_after`` has finished: roles stop in dependency order without code.
    """

    build: Callable[[Any, int], Role]
    help: str
    count: int = 1
    stops_after: tuple[str, ...] = ()
    grid: tuple[int, ...] = ()

    @property
    def campaign_counts(self) -> tuple[int, ...]:
        return self.grid or (self.count,)


@dataclass(frozen=True)
class Parameter:
    """An integer scenario parameter of a tracker (``--param name=value`` on the CLI)."""

    default: int
    help: str
    minimum: int = 0
    maximum: int | None = None

    def problem(self, name: str, value: int) -> str | None:
        if value < self.minimum:
            return f"{name} must be >= {self.minimum}, got {value}"
        if self.maximum is not None and value > self.maximum:
            return f"{name} must be <= {self.maximum}, got {value}"
        return None


@dataclass(frozen=True)
class Scenario:
    """A named set of worker counts and parameters (``--scenario NAME``); the rest default."""

    help: str
    workers: Mapping[str, int] = field(default_factory=dict)
    params: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Found:
    """A violation as a check at rest reports it: invariant name and integer fields."""

    invariant: str
    fields: Mapping[str, int]


class Invariant:
    """One property that must hold; its violations carry ints, rendered to words here.

    ``render`` names what broke in one line. ``scope`` (what a violation is about:
    its objects, the worker that saw it, where its operation began) and
    ``outcome`` (the explanation's ``=>`` line) are optional, as is
    ``check_at_rest``, which the coordinator calls once every worker finished.
    """

    name: str
    summary: str
    fields: tuple[str, ...] = ()

    def render(self, fields: Mapping[str, int], workers: Workers,
               params: Mapping[str, int]) -> str:
        """One line naming what broke, with the tracker's own names for its objects."""
        raise NotImplementedError(f"invariant {self.name!r} must define render()")

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        """What a violation is about; by default every field names an object."""
        return Scope(subjects=tuple(fields.items()))

    def outcome(self, fields: Mapping[str, int], params: Mapping[str, int]) -> str | None:
        """The explanation's ``=> what broke`` line; None: the violation's own message."""
        return None

    def check_at_rest(self, tracker: Any) -> list[Found]:
        """Violations only visible once every worker finished (coordinator-side, reads only)."""
        return []


class Tracker:
    """Base class of every tracker: subclass it, fill the class attributes, build in __init__.

    The coordinator builds one instance before forking (so its shared arrays and
    locks exist in every worker), polls ``drained()`` while the run settles,
    calls ``reset()`` before each controlled execution and ``teardown()`` once
    at the end. Those three run in the coordinator and only read shared state
    (``reset`` and ``teardown`` are for state the harness does not own: a
    library's own segments or files).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    variants: ClassVar[Mapping[str, str]]
    """Variant name -> one line; the first is the default."""
    roles: ClassVar[Mapping[str, RoleSpec]]
    parameters: ClassVar[Mapping[str, Parameter]] = {}
    invariants: ClassVar[Sequence[Invariant]]
    scenarios: ClassVar[Mapping[str, Scenario]] = {}

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        """Build the shared state: arrays, locks, ghost state. Keep ``setup.runtime``."""

    @classmethod
    def param_problems(cls, params: Mapping[str, int]) -> list[str]:
        """What is wrong with this combination of parameters (each is already within its own
        bounds), one phrase each: refused with the run's other problems before anything is
        built, e.g. ``"--param a (5) must be <= b (4)"``."""
        return []

    @classmethod
    def words(cls, params: Mapping[str, int]) -> Words:
        """How logs and explanations word this tracker's points (default: as recorded)."""
        return Words()

    def drained(self) -> bool:
        """Has outstanding work settled so that STOP can begin? (coordinator-side)"""
        return True

    def reset(self) -> None:
        """Before each controlled execution, after the harness restored its shared memory."""

    def teardown(self) -> None:
        """Once, after the last worker exited: release what the harness does not own."""
