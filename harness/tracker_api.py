"""The plugin API: what a tracker gives the harness, and what the harness gives it back.

A tracker is one class. The coordinator builds it before forking (so its
shared arrays and instrumented locks exist in every worker), asks it for a
role object inside each worker, polls ``drained()`` while the run settles,
and finally asks for the violations only visible at rest. Everything else a
tracker does goes through the ``Runtime`` it was given: ``point()``,
``lock()``, ``violation()``.

``harness.plugin_check`` validates a tracker class against this protocol
before any worker starts, and ``examples/README.md`` documents it for plugin
authors, with the point discipline every shared access must follow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from harness.control import Phase
from harness.runtime import Runtime
from harness.shm import Arena


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
class WorkerInfo:
    """Who a worker is, for messages: ``gatherer #1 (pid 18778)``."""

    worker_id: int
    role: str
    index: int
    pid: int = 0

    def describe(self) -> str:
        pid = f" (pid {self.pid})" if self.pid else ""
        return f"{self.role} #{self.index + 1}{pid}"


@dataclass(frozen=True)
class FoundViolation:
    """A violation as a tracker reports it at rest: invariant name and integer fields."""

    invariant: str
    fields: Mapping[str, int]


@runtime_checkable
class Invariant(Protocol):
    """One property that must hold; its violations carry ints, rendered here to words."""

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str: ...

    @property
    def fields(self) -> tuple[str, ...]:
        """Names of the integer fields a violation of this invariant carries."""
        ...

    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        """One line naming what broke, with the tracker's own names for its objects."""
        ...


@runtime_checkable
class Role(Protocol):
    """The loop body of one worker process."""

    def step(self, phase: Phase) -> bool:
        """Do one unit of work; return False once there is nothing left to do in this phase."""
        ...


class Tracker(Protocol):
    """A data structure in shared memory, its variants, roles and invariants.

    Optional: a classmethod ``log_words(params) -> harness.log_words.LogWords``
    gives the words logs and explanations use for the tracker's points (names
    for its int fields, verbosity per point, a phrase per step, what a
    violation is about). Without it every point renders as its label.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    variants: ClassVar[Mapping[str, str]]
    roles: ClassVar[Mapping[str, str]]
    default_counts: ClassVar[Mapping[str, int]]
    parameters: ClassVar[Mapping[str, Parameter]]
    invariants: ClassVar[Sequence[Invariant]]

    def __init__(
        self, runtime: Runtime, arena: Arena, variant: str, params: Mapping[str, int]
    ) -> None: ...

    def role(self, name: str, index: int) -> Role: ...

    def drained(self) -> bool:
        """Coordinator-side: has outstanding work settled so that STOP can begin?"""
        ...

    def final_violations(self) -> list[FoundViolation]:
        """Coordinator-side, after every worker exited: invariants only checkable at rest."""
        ...
