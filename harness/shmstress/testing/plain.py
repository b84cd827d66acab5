"""Plain multiprocessing code as a test, in the style of Fray's ``@ConcurrencyTest`` and
Shuttle's ``check_random``: the function is the scenario, shmstress runs it under
controlled scheduling, and a failure raises with the interleaving and the replay command.

    from shmstress.testing.plain import concurrency_test

    @concurrency_test(executions=500)
    def test_counter():
        counter = multiprocessing.Value("i", 0)
        ...

The function must be importable by name from its module (a module-level function): each
session imports the module afresh in a process of its own, with the instrumented
primitives in place, so objects the module makes at import are under control too.

What a check found goes to a ``ScenarioKeeper``: by default a failing execution's bundle
is written into ``$SHMSTRESS_OUT``; under ``pytest --stress-report DIR`` the plugin's
keeper keeps it under DIR and records the test's run in DIR/results.jsonl, as it does a
stress run's.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from shmstress.controlled.strategies import DEFAULT, StrategySpec, spec_of
from shmstress.core.config import default_out
from shmstress.core.errors import ConcurrencyFailure, PlainLimitError, ScenarioError
from shmstress.core.exit_reason import ExitCode
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import SCENARIO_ATTRIBUTE, ScenarioRef
from shmstress.plain.spec import SessionOptions
from shmstress.render.plain_report import result_lines
from shmstress.repro.plain_bundle import PlainBundle, from_outcome, write_plain_bundle

F = TypeVar("F", bound=Callable[..., Any])

CHECK_ATTRIBUTE = "__shmstress_check__"
"""The decorated test's attribute holding its ``check`` with the decorator's arguments, which
the pytest plugin calls with a keeper of its own (``check(keeper=...)``)."""


def scenario_of(function: Callable[..., Any]) -> ScenarioRef:
    """Where ``function`` lives, as a scenario the host can import."""
    module = sys.modules.get(function.__module__)
    path = getattr(module, "__file__", None)
    name = function.__qualname__
    if path is None or "<locals>" in name:
        raise ScenarioError(f"{name} must be a module-level function of a file, so that "
                            "shmstress can import it in a process of its own")
    return ScenarioRef(str(Path(path).resolve()), name)


class ScenarioKeeper(Protocol):
    """Where ``check`` puts what it found."""

    def keep(self, bundle: PlainBundle) -> Path:
        """Keep the failing execution's bundle; the path its failure message names."""
        ...

    def finished(self, result: PlainResult, accept_uncontrolled: bool) -> None:
        """Hear every search's result, failing or not, before the test's verdict."""
        ...


class OutDirectory:
    """The keeper outside a report: a bundle goes where failing runs write theirs,
    ``$SHMSTRESS_OUT`` (read at that moment, so a fixture may set it); results are not
    kept."""

    def keep(self, bundle: PlainBundle) -> Path:
        return write_plain_bundle(bundle, Path(default_out()))

    def finished(self, result: PlainResult, accept_uncontrolled: bool) -> None:
        return None


def check(function: Callable[..., Any], *, executions: int = 1000,
          strategy: str | StrategySpec = DEFAULT, seed: int = 0, depth: int | None = None,
          spin: str | None = None, bound: int | None = None, trace: tuple[str, ...] = (),
          auto_trace: bool = True, accept_uncontrolled: bool = False,
          max_steps: int = SessionOptions.max_steps,
          max_processes: int = SessionOptions.max_processes,
          keeper: ScenarioKeeper | None = None) -> PlainResult:
    """Run ``function`` under controlled scheduling; raise ``ConcurrencyFailure`` if an
    execution fails (its bundle is kept by ``keeper``, by default written where failing
    runs write, ``$SHMSTRESS_OUT``), or, unless ``accept_uncontrolled``, if the self-check
    saw code outside control."""
    __tracebackhide__ = True
    keeper = keeper if keeper is not None else OutDirectory()
    ref = scenario_of(function)
    spec = SessionOptions(tuple(trace), auto_trace, max_steps, max_processes).spec(ref)
    exploration = Exploration(spec_of(strategy, depth=depth, spin=spin, bound=bound), seed,
                              executions)
    result = explore(spec, exploration)
    named = f"{ref.module}:{ref.function}"
    bundle = None
    if result.failing is not None and result.failing.failed:
        bundle = keeper.keep(from_outcome(named, spec, result.strategy, seed,
                                          result.failing_index, result.failing))
    keeper.finished(result, accept_uncontrolled)
    if result.limit is not None:  # no verdict on the code: the test errors, it does not fail
        raise PlainLimitError(result.limit)
    if result.failing is not None:
        raise ConcurrencyFailure("\n".join(result_lines(result, named, bundle,
                                                          in_pytest=True)))
    if result.exit_code is ExitCode.NOT_CONTROLLED and not accept_uncontrolled:
        raise ConcurrencyFailure("\n".join(result_lines(result, named, None)))
    return result


def concurrency_test(*, executions: int = 1000, strategy: str | StrategySpec = DEFAULT,
                     seed: int = 0, depth: int | None = None, spin: str | None = None,
                     bound: int | None = None, trace: tuple[str, ...] = (),
                     auto_trace: bool = True, accept_uncontrolled: bool = False,
                     max_steps: int = SessionOptions.max_steps,
                     max_processes: int = SessionOptions.max_processes) -> Callable[[F], F]:
    """Decorate a module-level test: it passes when ``executions`` controlled executions
    of it all do, and fails with the interleaving and the replay command otherwise.

    ``strategy`` (the default portfolio, "pct" with ``depth`` and ``spin``, "random_walk",
    "exhaustive" or "dpor" with ``bound``: ``shmstress test --help`` says what each does;
    parameters left None take the strategy's defaults; or a spec with
    its parameters, ``PctSpec(depth=4)``, ``DporSpec(bound=2)``) picks who steps,
    from ``seed`` (the same seed, the same executions, so a CI failure repeats on a
    laptop); ``trace`` names code whose shared-memory accesses are points (``--trace``),
    besides the test's own project, traced unless ``auto_trace`` is off; a test that
    found nothing but ran code outside control fails too, unless ``accept_uncontrolled``;
    ``max_steps`` bounds one execution before it counts as hung; ``max_processes`` is
    how many processes the scenario may start. Module-level, because each execution
    imports the test's module afresh in a process of its own.
    """

    def decorate(function: F) -> F:
        run = functools.partial(check, function, executions=executions, strategy=strategy,
                                seed=seed, depth=depth, spin=spin, bound=bound, trace=trace,
                                auto_trace=auto_trace, accept_uncontrolled=accept_uncontrolled,
                                max_steps=max_steps, max_processes=max_processes)

        @functools.wraps(function)
        def test() -> None:
            __tracebackhide__ = True
            run()

        setattr(test, SCENARIO_ATTRIBUTE, function)
        setattr(test, CHECK_ATTRIBUTE, run)
        del test.__wrapped__  # pytest must see a test without arguments, not the scenario
        return test  # type: ignore[return-value]

    return decorate
