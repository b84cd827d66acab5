"""Explore a plain-code scenario, execution after execution; replay one execution.

Exploring stops at the first failing execution (a process raised, a deadlock,
no progress). Every execution is recorded as it runs (a step costs a few
words on the board), so the failing one needs no re-run to be explained; the
caller writes its bundle, and a replay of that bundle follows its steps.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from shmstress.controlled.coverage import Coverage
from shmstress.controlled.strategies import DEFAULT, Replay, exploring_strategy, spec_named
from shmstress.controlled.strategies.base import StrategySpec, current_spec, seeded_rng
from shmstress.core.errors import ConfigError, PlainLimitError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.provenance import shmstress_code
from shmstress.core.shm import sweep_stale_segments
from shmstress.core.signals import Interrupted, interruptible, shielded
from shmstress.core.trace import Step
from shmstress.plain.checkpoint import (
    CheckpointError,
    Checkpointing,
    Ending,
    Identity,
    Saved,
    Saver,
    Tally,
)
from shmstress.plain.footprints import Names
from shmstress.plain.outcome import PlainEnd, PlainOutcome
from shmstress.plain.session import FRESH_HOST_EXECUTIONS, PlainSession
from shmstress.plain.sources import Sources, changed_sources
from shmstress.plain.spec import PlainSpec

Progress = Callable[[int, dict[str, int]], None]
"""Called after each execution with (executions so far, ends so far)."""
Witness = Callable[[PlainOutcome], None]
"""Called after each execution with its outcome (a test records the schedules taken)."""


@dataclass(frozen=True)
class Exploration:
    """How to search: a strategy, a seed and a budget of executions."""

    strategy: StrategySpec = field(default_factory=lambda: spec_named(DEFAULT))
    seed: int = 0
    executions: int = 1000

    def validate(self) -> None:
        if self.executions < 1:
            raise ConfigError(f"--executions must be at least 1, got {self.executions}")


@dataclass(frozen=True)
class PlainResult:
    """Every execution's end, counted, and the first failing execution if there was one."""

    spec: PlainSpec
    exploration: Exploration
    executions: int
    ends: dict[str, int]
    steps: int  # over every execution
    elapsed_s: float
    exhausted: bool  # the strategy had nothing left to try
    failing: PlainOutcome | None = None
    failing_index: int = -1  # 0-based among the executions
    found_by: StrategySpec | None = None  # the failing execution's (a portfolio's member)
    coverage: Coverage | None = None  # controlled mode's: what the search tried
    uncontrolled: dict[str, int] = field(default_factory=dict)  # self-check line -> executions
    kinds: dict[str, int] = field(default_factory=dict)  # steps taken, by their verb
    interrupted: bool = False  # Ctrl-C or SIGTERM stopped it: the counts are of what ran

    @property
    def strategy(self) -> StrategySpec:
        """What a bundle of the failing execution stores as its strategy."""
        return self.found_by or self.exploration.strategy

    @property
    def limit(self) -> str | None:
        """The limit of shmstress an execution hit, in its own words (the failure's line
        without the class that said them), which ended the search without a verdict; None
        when none did."""
        failing = self.failing
        if failing is None or failing.end is not PlainEnd.LIMIT or failing.failure is None:
            return None
        return failing.failure.message.removeprefix(
            f"{PlainLimitError.__module__}.{PlainLimitError.__qualname__}: ")

    @property
    def exit_code(self) -> ExitCode:
        if self.failing is not None and self.failing.failed:
            return ExitCode.FAILURE
        if self.interrupted:
            return ExitCode.INTERRUPTED
        if self.limit is not None:
            return ExitCode.LIMIT
        if self.ends.get(PlainEnd.HUNG.value):
            return ExitCode.BROKEN
        if self.uncontrolled:
            return ExitCode.NOT_CONTROLLED
        return ExitCode.CLEAN

    @property
    def executions_per_s(self) -> float:
        return self.executions / self.elapsed_s if self.elapsed_s > 0 else 0.0


class ExplorationInterrupted(Interrupted):
    """Ctrl-C or SIGTERM stopped an exploration; ``result`` is what ran before it. Still a
    KeyboardInterrupt, so a caller that only stops (a benchmark, a pytest run) stops as
    before, and one that reports (``shmstress test``) says what ran."""

    def __init__(self, result: PlainResult) -> None:
        super().__init__()
        self.result = result


def explore(spec: PlainSpec, exploration: Exploration, progress: Progress | None = None,
            checkpoint: Checkpointing | None = None,
            witness: Witness | None = None) -> PlainResult:
    """Run executions until one fails, the budget is spent or the strategy runs out.

    With ``checkpoint``, the exploration starts from the checkpoint its file holds (one of
    another exploration is refused), saves itself there as it goes, and when a signal
    stops it (``plain/checkpoint.py``); a rerun with the same file then goes on exactly
    where it stopped, and one after its end gives its result again."""
    exploration.validate()
    identity = Identity.of(spec, exploration.strategy, exploration.seed,
                           exploration.executions)
    saved = None if checkpoint is None else checkpoint.load(identity)
    resumed = saved is not None
    if saved is None:
        strategy = None if spec.free is not None else exploring_strategy(
            exploration.strategy, exploration.seed, spec.max_processes, spec.max_steps,
            "plain")
        saved = Saved(Tally(), strategy, seeded_rng(exploration.seed, "free"), Names())
    if saved.ending is None:
        started = time.monotonic() - saved.tally.elapsed_s
        try:
            _search(spec, exploration, saved, (progress, witness), checkpoint, identity,
                    resumed)
        except KeyboardInterrupt:
            if checkpoint is not None:  # it saved itself: the caller says where
                raise
            # what ran up to the signal (the tally is updated after each execution)
            saved.tally.elapsed_s = time.monotonic() - started
            raise ExplorationInterrupted(_result(spec, exploration, saved,
                                                 interrupted=True)) from None
    elif checkpoint is not None:  # it ended before: its result stands only for its code
        with PlainSession(spec, saved.names, lean_host(checkpoint)) as session:
            _check_code(checkpoint, saved, session.sources)
    return _result(spec, exploration, saved)


def _check_code(checkpoint: Checkpointing, saved: Saved, sources: Sources) -> None:
    """Refuse a loaded exploration whose code under test changed since it was saved (its
    executions and the new ones would be of two programs); else say it goes on."""
    changed = changed_sources(saved.sources or {}, sources)
    if changed:
        raise CheckpointError(f"checkpoint {checkpoint.path} was saved with other code under "
                              f"test ({changed}): delete it to search the code as it is")
    done, ours = saved.tally.executions, shmstress_code()
    if saved.shmstress != ours and saved.ending is None:
        checkpoint.log(f"checkpoint {checkpoint.path} was saved by shmstress {saved.shmstress}, "
                       f"this is {ours}: it goes on, but may take other executions than an "
                       "uninterrupted run would (delete it to start over)")
    checkpoint.log(f"resumed from checkpoint {checkpoint.path} at execution {done + 1:,} "
                   f"({done:,} done)" if saved.ending is None else
                   f"ended before ({done:,} executions): result read from checkpoint "
                   f"{checkpoint.path}")


def _search(spec: PlainSpec, exploration: Exploration, saved: Saved,
            hooks: tuple[Progress | None, Witness | None], checkpoint: Checkpointing | None,
            identity: Identity, resumed: bool) -> None:
    """The executions, from where ``saved`` stands to the end: ``saved`` is updated after
    each one, so it is whole at every execution boundary."""
    strategy, tally = saved.strategy, saved.tally
    seeds = saved.seeds
    progress, witness = hooks
    ends, count = tally.ends, tally.coverage
    saver = None if checkpoint is None else Saver(checkpoint, identity, tally.executions)
    sweep_stale_segments()
    started = time.monotonic() - tally.elapsed_s
    ending = Ending(False, None, None)
    # checkpointing: the loop runs shielded, so a signal lets the execution finish, and
    # the exploration saves and stops at the next boundary
    guard = shielded if saver is not None else contextlib.nullcontext
    fresh = lean_host(checkpoint)
    rehost = (tally.executions + FORKED_HOST_EXECUTIONS
              if not fresh and exploration.executions >= FRESH_HOST_EXECUTIONS else -1)
    with interruptible() as interrupt, _Host(spec, saved.names, fresh) as host, guard():
        session = host.session
        if checkpoint is not None and resumed:
            _check_code(checkpoint, saved, session.sources)
        elif checkpoint is not None:
            saved.sources, saved.shmstress = session.sources, shmstress_code()
        while tally.executions < exploration.executions:
            if saver is not None:
                if interrupt.fired:
                    break
                if saver.due(tally.executions):
                    tally.elapsed_s = time.monotonic() - started
                    saver.save(saved)
            if strategy is not None and not strategy.new_execution():
                ending.exhausted = True
                break
            if tally.executions == rehost:
                session = host.fresh()
            seed = strategy.next_u64() if strategy is not None else seeds.getrandbits(63)
            outcome = session.execute(strategy, seed)
            tally.executions += 1
            ends[outcome.end.value] = ends.get(outcome.end.value, 0) + 1
            tally.steps += len(outcome.steps)
            for line in outcome.uncontrolled:
                tally.uncontrolled[line] = tally.uncontrolled.get(line, 0) + 1
            for step in outcome.steps:
                verb = step.label.partition(" ")[0]
                tally.kinds[verb] = tally.kinds.get(verb, 0) + 1
            count.add(outcome.preemptions, outcome.end is PlainEnd.STEP_BOUND, None)
            if witness is not None:
                witness(outcome)
            if progress is not None:
                progress(tally.executions, ends)
            if outcome.failed or outcome.end in (PlainEnd.HUNG, PlainEnd.LIMIT):
                ending.failing = outcome
                if strategy is not None:
                    ending.found_by = current_spec(strategy)
                break
        tally.elapsed_s = time.monotonic() - started
        stopped = (saver is not None and interrupt.fired and ending.failing is None
                   and not ending.exhausted and tally.executions < exploration.executions)
        if not stopped:
            saved.ending = ending
        if saver is not None:
            saver.save(saved)
    if stopped:  # the signal, delivered at the boundary it was saved at
        interrupt.acknowledge()
        raise Interrupted


FORKED_HOST_EXECUTIONS = 100
"""A long search (``session.FRESH_HOST_EXECUTIONS``) not checkpointed runs this many executions
in a forked host before it moves to a fresh one: a forked host is ready in a few
milliseconds, a fresh interpreter in about 0.1 s of CPU (ten times the time to the first
failure of a two-process lost update), and many bugs are found in the first executions."""


def lean_host(checkpoint: Checkpointing | None) -> bool:
    """Whether the search's host is a fresh interpreter (``plain.host``) from the start: for
    any checkpointed search. A host forked from a coordinator that has just loaded a
    checkpoint would carry the whole search (DPOR's tree: hundreds of MB) into the fork of
    every process of every execution; and the code under test a checkpoint keeps
    (``plain.sources``) is what the host loaded, which in a fork includes the coordinator's
    modules: the same kind of host every time gives the same files. A long search moves to
    a fresh host after ``FORKED_HOST_EXECUTIONS`` (``_Host``)."""
    return checkpoint is not None


class _Host:
    """The search's session, and its move to a fresh host: the new session takes the
    execution count of the old one (``selfcheck.scanned``), so the executions are those of
    one session."""

    def __init__(self, spec: PlainSpec, names: Names, fresh: bool) -> None:
        self._spec, self._names = spec, names
        self.session = PlainSession(spec, names, fresh)
        self._open = True

    def fresh(self) -> PlainSession:
        done = self.session.executions
        self._open = False
        self.session.close()
        self.session = PlainSession(self._spec, self._names, fresh_host=True)
        self._open = True
        self.session.executions = done
        return self.session

    def __enter__(self) -> _Host:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._open:
            self.session.__exit__(kind, value, traceback)


def _result(spec: PlainSpec, exploration: Exploration, saved: Saved,
            interrupted: bool = False) -> PlainResult:
    tally, ending, strategy = saved.tally, saved.ending, saved.strategy
    if ending is None:  # interrupted: no execution failed, and the search goes on no more
        assert interrupted
        ending = Ending(False, None, None)
    failing = ending.failing
    return PlainResult(spec, exploration, tally.executions, tally.ends, tally.steps,
                       tally.elapsed_s, ending.exhausted, failing,
                       tally.executions - 1 if failing is not None else -1, ending.found_by,
                       None if strategy is None else tally.coverage.result(strategy,
                                                                           ending.exhausted),
                       dict(tally.uncontrolled), dict(tally.kinds), interrupted)


def replay(spec: PlainSpec, steps: Sequence[Step], execution_seed: int) -> PlainOutcome:
    """Run one execution that takes exactly ``steps`` (it stops where it cannot)."""
    sweep_stale_segments()
    strategy = Replay(steps, execution_seed)
    strategy.new_execution()
    with interruptible(), PlainSession(spec) as session:
        return session.execute(strategy, execution_seed)
