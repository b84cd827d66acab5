"""The plugin API: what a tracker gives the harness, and what the harness gives it back.

A tracker is one class. The coordinator builds it before forking (so its
shared arrays and instrumented locks exist in every worker), asks it for a
role object inside each worker, polls ``drained()`` while the run settles,
and finally asks for the violations only visible at rest. Everything else a
tracker does goes through the runtime it was given, of which it may use only
what ``TrackerRuntime`` lists: the rest of ``harness.runtime.Runtime``
(attaching a worker, committing a point) is the harness's own machinery.

``BaseTracker``, ``idle``, ``describe_worker``, ``age_one``, ``bits`` and
``ApiConflict`` are optional helpers the built-in trackers share.
``harness.plugin_check`` validates a tracker class against this protocol
before any worker starts, and ``examples/README.md`` documents it for
plugin authors, with the point discipline every shared access must follow.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
from shmstress.core.control import Phase
from shmstress.core.locks import InstrumentedLock
from shmstress.core.runtime import NONE
from shmstress.core.shm import Arena, SharedArray
from shmstress.core.workers import WorkerInfo


class TrackerRuntime(Protocol):
    """What tracker code may use of the runtime it is given; nothing else is stable.

    The object is a ``harness.runtime.Runtime``; typing a tracker's runtime
    parameter with this protocol lets mypy keep the tracker to this surface.
    """

    @property
    def worker_id(self) -> int:
        """This worker's id (an index into the ``workers`` that ``render`` receives)."""
        ...

    @property
    def rng(self) -> random.Random:
        """This worker's RNG, derived from (run seed, worker id): draw every decision from it."""
        ...

    @property
    def last_seq(self) -> int:
        """Sequence number of this worker's latest point: where an operation began, for
        ``harness.log_words.Scope.start``."""
        ...

    @property
    def role_workers(self) -> Mapping[str, tuple[int, ...]]:
        """Worker ids per role, already set when the tracker is built (e.g. to split work)."""
        ...

    def lock(self, name: str) -> InstrumentedLock:
        """An instrumented lock whose acquire is a point; create every lock in ``__init__``."""
        ...

    def point(self, label: str, **fields: object) -> int:
        """A step that is not a lock acquire; returns its sequence number."""
        ...

    def log(self, message: str, level: str = "I", **fields: object) -> None:
        """A log line between points ("I", "W" or "E"): what a step saw, not a step."""
        ...

    def violation(self, invariant: str, **fields: int) -> None:
        """Report a broken invariant where it happens (may stop the run at once)."""
        ...

    def role_finished(self, role: str) -> bool:
        """Have all workers of ``role`` finished? For stopping in dependency order."""
        ...

    def checks(self, invariant: str) -> bool:
        """Is ``invariant`` checked in this run? Lets a tracker skip unneeded bookkeeping."""
        ...


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
        self, runtime: TrackerRuntime, arena: Arena, variant: str, params: Mapping[str, int]
    ) -> None: ...

    def role(self, name: str, index: int) -> Role: ...

    def drained(self) -> bool:
        """Coordinator-side: has outstanding work settled so that STOP can begin?"""
        ...

    def final_violations(self) -> list[FoundViolation]:
        """Coordinator-side, after every worker exited: invariants only checkable at rest."""
        ...


# -- helpers every built-in tracker shares --------------------------------------------------
class ApiConflict(Exception):  # noqa: N818 - named after the HTTP status
    """An optimistic-concurrency update found its object changed since it was read: the
    caller re-reads and retries (a Kubernetes API server's 409, as trackers model it)."""


def idle() -> bool:
    """What a step returns when its role has nothing to do yet: yield, then go on.

    The yield is the rule for controlled mode: there one worker runs at a
    time, and PCT keeps running the highest-priority worker until it yields,
    so a role that spins without yielding starves the worker it waits for
    until the execution hits ``--max-steps``. In free mode it is a plain
    ``os.sched_yield``. The step must still have made a point (the read that
    found nothing to do).
    """
    os.sched_yield()  # looked up at call time: controlled workers replace it with a hint
    return True


def age_one(candidates: np.ndarray, age: SharedArray, pick: int, hold: int) -> int:
    """Age one of ``candidates`` (indices, chosen by ``pick``) by a step; return it once its age
    reached ``hold``, else NONE. The caller holds the lock that guards ``age``.

    Holds count steps, not seconds, so a seed (and a replay) makes the same decisions.
    """
    if candidates.size == 0:
        return NONE
    chosen = int(candidates[pick % candidates.size])
    aged = age.mv[chosen] + 1
    age.mv[chosen] = aged
    return chosen if aged >= hold else NONE


def bits(mask: int) -> list[int]:
    """The indices set in a bitmask, lowest first: trackers keep small sets (a group's devices,
    a claim's ReservedFor) as one int64 field so a record or violation carries them whole."""
    return [bit for bit in range(mask.bit_length()) if mask >> bit & 1]


@runtime_checkable
class AtRestCheck(Protocol):
    """An invariant that can also be judged once every worker has stopped."""

    def check_at_rest(self, tracker: Any) -> list[FoundViolation]: ...


class BaseTracker:
    """Optional base of a tracker: ``role()`` from ``role_types``, ``final_violations()`` from
    the invariants that define ``check_at_rest``, and nothing outstanding by default."""

    name: ClassVar[str]
    invariants: ClassVar[Sequence[Invariant]]
    role_types: ClassVar[Mapping[str, Callable[[Any, int], Role]]]
    """Role name -> a callable ``(tracker, index)`` building that role's object."""

    def role(self, name: str, index: int) -> Role:
        build = self.role_types.get(name)
        if build is None:
            raise ValueError(f"{self.name} has no role {name!r}")
        return build(self, index)

    def drained(self) -> bool:
        return True

    def final_violations(self) -> list[FoundViolation]:
        return [found for invariant in self.invariants if isinstance(invariant, AtRestCheck)
                for found in invariant.check_at_rest(self)]
