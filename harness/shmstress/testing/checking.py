"""One ``check`` for both kinds of target: plain multiprocessing code and a tracker.

Shuttle has ``check_random``, ``check_pct``, ``check_dfs``...; here the strategy is a
parameter (a name with its parameters, or a spec such as ``PctSpec(depth=4)``), and the
target says which engine runs it: a function is a plain-code scenario (``testing.plain``),
a tracker (its class, its installed name or ``path/to/file.py:Class``) is explored with its
roles and invariants (``testing.explore``). Both raise ``ConcurrencyFailure`` with the
interleaving and the replay command; a parameter that means nothing for the target is
refused in one line rather than ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, overload

from shmstress.controlled.options import DEFAULT_MAX_STEPS, DEFAULT_RUN_STEPS
from shmstress.controlled.result import ControlledResult
from shmstress.controlled.strategies import DEFAULT, StrategySpec
from shmstress.core.errors import ConfigError
from shmstress.plain.runner import PlainResult
from shmstress.plain.spec import SessionOptions
from shmstress.plugin.tracker import Tracker
from shmstress.testing import explore, plain
from shmstress.testing.trackers import TrackerRef

PLAIN_EXECUTIONS = 1000
"""A plain-code check's executions by default (``concurrency_test``'s)."""
TRACKER_EXECUTIONS = 100
"""A tracker check's, as ``check_interleavings``'s (a tracker execution is many more steps)."""


@overload
def check(  # type: ignore[overload-overlap]  # a tracker class is callable too: it goes first
          target: TrackerRef, variant: str | None = None, *, executions: int | None = ...,
          strategy: str | StrategySpec = ..., seed: int = ..., depth: int | None = ...,
          spin: str | None = ..., bound: int | None = ..., max_steps: int | None = ...,
          counts: Mapping[str, int] | None = ..., params: Mapping[str, int] | None = ...,
          run_steps: int | None = ..., out: Path | str | None = ...
          ) -> ControlledResult: ...


@overload
def check(target: Callable[[], object], variant: None = None, *,
          executions: int | None = ..., strategy: str | StrategySpec = ..., seed: int = ...,
          depth: int | None = ..., spin: str | None = ..., bound: int | None = ...,
          max_steps: int | None = ..., trace: tuple[str, ...] = ..., auto_trace: bool = ...,
          accept_uncontrolled: bool = ..., max_processes: int | None = ...) -> PlainResult: ...


def check(target: Any, variant: str | None = None, *, executions: int | None = None,
          strategy: str | StrategySpec = DEFAULT, seed: int = 0, depth: int | None = None,
          spin: str | None = None, bound: int | None = None, max_steps: int | None = None,
          **only: Any) -> PlainResult | ControlledResult:
    """Explore ``target``'s interleavings under controlled scheduling: ``executions`` of
    them from ``seed`` (the same seed, the same executions), chosen by ``strategy`` with
    ``depth``, ``spin`` or ``bound`` where given; raise ``ConcurrencyFailure`` if one fails,
    else return the result.

    ``target`` is a module-level function (plain code; also ``trace``, ``auto_trace``,
    ``accept_uncontrolled``, ``max_processes``, as ``concurrency_test`` takes them;
    default 1,000 executions) or a tracker with its ``variant`` (also ``counts``,
    ``params``, ``run_steps``, ``out``, as ``check_interleavings``; default 100).
    """
    __tracebackhide__ = True
    knobs: dict[str, Any] = {"strategy": strategy, "seed": seed, "depth": depth, "spin": spin,
                             "bound": bound}
    if isinstance(target, str) or (isinstance(target, type) and issubclass(target, Tracker)):
        _refuse(only, {"counts", "params", "run_steps", "out"}, "a tracker")
        return explore.check_interleavings(
            target, variant, executions=_given(executions, TRACKER_EXECUTIONS),
            max_steps=_given(max_steps, DEFAULT_MAX_STEPS),
            run_steps=_given(only.pop("run_steps", None), DEFAULT_RUN_STEPS), **knobs, **only)
    if not callable(target) or isinstance(target, type):
        raise ConfigError(f"check takes a function or a tracker, not {target!r}")
    if variant is not None:
        raise ConfigError(f"variant {variant!r}: a variant is a tracker's; "
                          f"{target.__qualname__} is plain code")
    _refuse(only, {"trace", "auto_trace", "accept_uncontrolled", "max_processes"},
            "plain code")
    processes = only.pop("max_processes", None)
    return plain.check(
        target, executions=_given(executions, PLAIN_EXECUTIONS),
        max_steps=_given(max_steps, SessionOptions.max_steps),
        max_processes=_given(processes, SessionOptions.max_processes),
        **knobs, **only)


def _given(value: int | None, default: int) -> int:
    """``value`` unless it was left out: an explicit 0 reaches the check that refuses it."""
    return default if value is None else value


def _refuse(given: Mapping[str, object], takes: set[str], kind: str) -> None:
    """One line naming the parameters given that ``kind`` does not take."""
    wrong = sorted(set(given) - takes)
    if wrong:
        raise ConfigError(f"{', '.join(wrong)}: not a parameter of a check of {kind} "
                          f"(it takes {', '.join(sorted(takes))} besides the common ones)")
