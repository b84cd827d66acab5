"""Linearizability as a test: ``check_linearizable`` and the ``@linearizable`` decorator.

    from hypothesis import strategies as st
    from shmstress.testing import linearizable

    @linearizable(Counter, operations={"increment": None, "add": st.integers(1, 3)})
    def test_counter_is_linearizable() -> None:
        pass

The class must be defined at the top level of a file (each session imports it afresh in a
process of its own, under the instrumented primitives). Hypothesis' settings apply as in
any Hypothesis test (the profile, or ``settings=``, or ``@settings`` under the decorator),
with two changes: a deadline of Hypothesis' default (200 ms) is lifted (an execution starts
processes, and a loaded machine is slow, not wrong; any other deadline holds), and the
"explain" phase is left out (it traces the coordinator, whose lines explain nothing about
the object).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import hypothesis
from hypothesis import HealthCheck, Phase

from shmstress.core.config import default_out
from shmstress.core.errors import ConcurrencyFailure
from shmstress.core.exit_reason import ExitCode
from shmstress.plain.scenario import ScenarioRef
from shmstress.testing.lincheck.declaration import Arguments, declared
from shmstress.testing.lincheck.program import Shape
from shmstress.testing.lincheck.report import (
    FailureFiles,
    clean_lines,
    failure_lines,
    write_failure,
)
from shmstress.testing.lincheck.scenario_file import TargetNames
from shmstress.testing.lincheck.search import Plan, SearchResult, search
from shmstress.testing.plain import scenario_of

F = TypeVar("F", bound=Callable[..., Any])
_SETTINGS = "_hypothesis_internal_use_settings"  # where @settings leaves them on a function

Named = str | Callable[..., Any]
"""A class or function, or its ``FILE.py:NAME`` / ``MODULE:NAME``."""


class LincheckFailure(ConcurrencyFailure):
    """A generated program failed: not linearizable, an assert, a deadlock; the message
    has the table, the interleaving and the replay command."""

    def __init__(self, message: str, result: SearchResult, files: FailureFiles) -> None:
        super().__init__(message)
        self.result = result
        self.files = files


def lincheck_settings(chosen: hypothesis.settings | None = None) -> hypothesis.settings:
    """``chosen`` (default: the current profile's), as lincheck runs them (module docstring)."""
    base = chosen if chosen is not None else hypothesis.settings()
    deadline = base.deadline
    if deadline == hypothesis.settings.get_profile("default").deadline:
        deadline = None
    return hypothesis.settings(
        base, deadline=deadline,
        phases=tuple(phase for phase in base.phases if phase is not Phase.explain),
        suppress_health_check=(*base.suppress_health_check, HealthCheck.too_slow))


def names_of(target: Named, model: Named | None = None, key: Named | None = None
             ) -> TargetNames:
    def name(thing: Named | None) -> str | None:
        if thing is None:
            return None
        return ScenarioRef.parse(thing).describe() if isinstance(thing, str) else \
            scenario_of(thing).describe()

    named = name(target)
    assert named is not None
    return TargetNames(named, name(model), name(key))


def plan_of(target: Named, operations: Mapping[str, Arguments] | None = None, *,
            model: Named | None = None, key: Named | None = None, shape: Shape | None = None,
            max_steps: int = Plan.max_steps, per_program: int = 0) -> Plan:
    """What ``check_linearizable`` searches, checked before anything starts."""
    names = names_of(target, model, key)
    cls = ScenarioRef.parse(target).load() if isinstance(target, str) else target
    if not isinstance(cls, type):
        raise TypeError(f"{names.target} is not a class")
    shape = shape or Shape()
    shape.validate()
    return Plan(names, declared(cls, operations), shape, max_steps, per_program)


def check_linearizable(
    target: Named, operations: Mapping[str, Arguments] | None = None, *,
    model: Named | None = None, key: Named | None = None, lanes: int = Shape.lanes,
    ops: int = Shape.ops, prefix: int = Shape.prefix, suffix: int = Shape.suffix,
    settings: hypothesis.settings | None = None, seed: int | None = None,
    max_steps: int = Plan.max_steps, per_program: int = 0, out: Path | str | None = None,
    accept_uncontrolled: bool = False,
) -> SearchResult:
    """Search programs of ``target``'s operations and their schedules; raise
    ``LincheckFailure`` if one fails, with its bundle written to ``out`` (default
    ``$SHMSTRESS_OUT`` or ``shmstress-out``).

    ``operations`` is the short form (``{"put": st.integers(0, 9), "get": None}``); without
    it, the class's ``operations`` attribute or its ``@operation`` methods. ``model``: a
    class whose fresh objects are the sequential specification (default: ``target`` itself,
    run one operation at a time); ``key``: a function of an ``Operation`` whose value
    partitions the history (operations on different keys are independent). Programs have
    2 to ``lanes`` lanes of 1 to ``ops`` operations, up to ``prefix`` before and ``suffix``
    after; ``per_program`` > 0 runs the portfolio that many times on each program instead
    of drawing the schedule; ``seed``: Hypothesis' (``@hypothesis.seed``; pytest's
    ``--hypothesis-seed`` applies too). A search that found nothing but ran code outside
    control has no verdict, and raises ``ConcurrencyFailure`` saying so, unless
    ``accept_uncontrolled``."""
    __tracebackhide__ = True
    plan = plan_of(target, operations, model=model, key=key,
                   shape=Shape(lanes, ops, prefix, suffix), max_steps=max_steps,
                   per_program=per_program)
    started = time.monotonic()
    result = search(plan, lincheck_settings(settings), seed)
    if result.failing is None:
        if result.exit_code(accept_uncontrolled) is not ExitCode.CLEAN:
            raise ConcurrencyFailure("\n".join(clean_lines(
                result, time.monotonic() - started, accept_uncontrolled)))
        return result
    files = write_failure(result, Path(out or default_out()))
    raise LincheckFailure("\n".join(failure_lines(result, files, in_pytest=True)), result,
                          files)


def linearizable(
    target: Named, operations: Mapping[str, Arguments] | None = None, *,
    model: Named | None = None, key: Named | None = None, lanes: int = Shape.lanes,
    ops: int = Shape.ops, prefix: int = Shape.prefix, suffix: int = Shape.suffix,
    settings: hypothesis.settings | None = None, seed: int | None = None,
    max_steps: int = Plan.max_steps, per_program: int = 0, accept_uncontrolled: bool = False,
) -> Callable[[F], F]:
    """Decorate a test: it passes when every program Hypothesis draws for ``target`` is
    linearizable (``check_linearizable``'s arguments), then runs its own body."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def test() -> None:
            __tracebackhide__ = True
            check_linearizable(target, operations, model=model, key=key, lanes=lanes, ops=ops,
                               prefix=prefix, suffix=suffix,
                               settings=settings or getattr(function, _SETTINGS, None),
                               seed=seed, max_steps=max_steps, per_program=per_program,
                               accept_uncontrolled=accept_uncontrolled)
            function()

        del test.__wrapped__  # pytest must see a test without arguments
        return test  # type: ignore[return-value]

    return decorate
