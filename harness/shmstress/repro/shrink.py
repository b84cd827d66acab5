"""Shrinking a failing schedule: fewest steps and preemptions, then workers and scenario.

A schedule is rewritten as its *deviations* from the schedule without
preemptions (``strategies.base.default_choice``); replaying the deviations
under the ``guided`` strategy gives the schedule back. Shrinking then works on
such lists, keeping a candidate only if it still breaks the same invariant
(the fields may differ: a shorter schedule hands out other claims and devices):

1. a short search on a ladder of step bounds (8, 16, 32... steps, each with
   a run phase a quarter as long) looks for a fresh failing schedule with
   PCT (both spin rules), random walk and a capped bounded exhaustive
   search: a schedule found within a bound of L steps is at most L long, and
   PCT's change points fall within those L steps, so a race a long free run
   hit after hundreds of thousands of steps is found again in tens;
2. smaller scenarios are tried (one worker fewer of a role, each parameter
   lowered), first with the deviations of the remaining workers, then with
   the short search below the best cost so far; the smallest that still
   fails gets a full short search of its own (its executions are shorter and
   a race needs fewer steps to show);
3. every candidate kept is polished: delta debugging (Zeller and Hildebrandt,
   TSE 2002) removes deviations; whole blocks of one worker's steps are
   dropped one at a time (``strategies.blocks``: the switches ddmin cannot
   take out, since dropping a deviation shifts every later one); and the
   churn is cut, a binary search for the shortest run phase under which the
   schedule still fails (fewer operations begun, less state to explain);
4. a bounded exhaustive search looks for a schedule with fewer preemptions
   than the best so far.

Candidates are compared by their *cost*, steps plus ``PREEMPTION_COST`` per
preemption (a reader follows a handful of switches in a short table more
easily than no switch in a long one), then preemptions, steps, workers and
scenario size; a candidate bigger than the input in steps, preemptions or
workers is never kept. Each step of the search has its share of a budget of
executions and of steps, so a long schedule cannot starve the later steps.
Every execution is deterministic for its seed and every random draw comes
from strategies seeded by the bundle's seed, in the coordinator, so shrinking
the same bundle twice gives the same result.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

from shmstress.controlled.execution import ExecutionOutcome, PhasePlan
from shmstress.controlled.runner import prepare, session_spec
from shmstress.controlled.session import Session
from shmstress.controlled.strategies import (
    Blocks,
    Exhaustive,
    Guided,
    Pct,
    RandomWalk,
    Replay,
    ShrunkSpec,
)
from shmstress.controlled.strategies.base import Strategy
from shmstress.controlled.strategies.blocks import Block, blocks_of, without_block
from shmstress.core.config import RunConfig
from shmstress.core.trace import Step
from shmstress.plugin.registry import load
from shmstress.plugin.tracker import Tracker
from shmstress.repro.bundle import Bundle, ExpectedViolation
from shmstress.repro.replay import ReplayReport, Verdict, replay_bundle

Deviations = tuple[tuple[int, int], ...]


PREEMPTION_COST = 10  # one preemption weighs as much as ten steps when candidates compare
_FIRST_RUNG = 8  # the shortest step bound the short search tries
_RUN_SHARE = 4  # on a rung of L steps the run phase is L / _RUN_SHARE steps
_CHURN_FLOOR = 1  # the shortest run phase tried when the churn is cut

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ShrinkOptions:
    """The budget of a shrink and where its progress goes.

    ``progress`` gets one line per stage (the CLI prints them on stderr), so a
    long shrink is never silent; None for a library caller that wants quiet.
    """

    max_executions: int = 3000
    max_seconds: float | None = None  # the search's time (the final replay adds its own)
    max_steps: int = 3_000_000  # steps over all executions: long schedules cost more
    search_executions: int = 200  # executions of the short search, per rung of its ladder
    pin: bool = True
    progress: Progress | None = None


@dataclass(frozen=True)
class Scenario:
    counts: Mapping[str, int]
    params: Mapping[str, int]

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.params.items())

    @property
    def size(self) -> int:
        return sum(self.params.values())

    @property
    def workers(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class Size:
    preemptions: int
    steps: int
    workers: int
    scenario: str
    scenario_size: int

    @property
    def cost(self) -> int:
        """What a reader pays: every step is a row, every preemption a switch to follow."""
        return self.steps + PREEMPTION_COST * self.preemptions

    def key(self) -> tuple[int, int, int, int, int]:
        return (self.cost, self.preemptions, self.steps, self.workers, self.scenario_size)

    def within(self, other: Size) -> bool:
        """No bigger than ``other`` in any measure the table shows."""
        return (self.preemptions <= other.preemptions and self.steps <= other.steps
                and self.workers <= other.workers)


@dataclass(frozen=True)
class _Candidate:
    scenario: Scenario
    deviations: Deviations
    outcome: ExecutionOutcome
    plan: PhasePlan  # the phases it ran under: the deviations reproduce it only with them

    @property
    def seed(self) -> int:
        return self.outcome.execution_seed

    @property
    def size(self) -> Size:
        return _size(self.scenario, self.outcome)


def _size(scenario: Scenario, outcome: ExecutionOutcome) -> Size:
    return Size(outcome.preemptions, len(outcome.steps), scenario.workers, scenario.describe(),
                scenario.size)


@dataclass(frozen=True)
class ShrinkReport:
    bundle: Bundle
    before: Size
    after: Size
    executions: int
    elapsed_s: float
    replay: ReplayReport


class _Budget(Exception):  # noqa: N818 - internal signal
    """The search spent its executions (or its time)."""


class _Search:
    """Runs candidates; keeps one session open (the scenario last used)."""

    def __init__(self, bundle: Bundle, options: ShrinkOptions, best: _Candidate,
                 limit: Size) -> None:
        self.bundle = bundle
        self.options = options
        self.best = best
        self.limit = limit  # the input's size: nothing bigger is ever kept
        self.executions = 0
        self.steps = 0
        self._t0 = time.monotonic()
        self._stage_end = (options.max_executions, options.max_steps)
        self._session: Session | None = None
        self._session_of: Scenario | None = None
        self._max_steps = max(len(bundle.steps) * 2, 1000)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def session(self, scenario: Scenario) -> Session:
        if self._session is not None and self._session_of == scenario:
            return self._session
        self.close()
        config = RunConfig(tracker=self.bundle.tracker, variant=self.bundle.variant,
                           counts=dict(scenario.counts), params=dict(scenario.params),
                           seed=self.bundle.seed, checks=self.bundle.checks)
        resolved, tracker_cls, workers = prepare(config)
        noise = self.bundle.noise if self.bundle.replays_noise_draws else None
        self._session = Session(session_spec(resolved, tracker_cls, workers, self._max_steps,
                                             noise_draws=noise, pin=self.options.pin))
        self._session_of = scenario
        return self._session

    @contextlib.contextmanager
    def stage(self, name: str, share: float, executions: int | None = None) -> Iterator[None]:
        """A step of the search with ``share`` of what is left of the budget (or a number of
        executions); running out ends only this step. Reports the best so far when done."""
        options = self.options
        left = (options.max_executions - self.executions, options.max_steps - self.steps)
        self._stage_end = (
            self.executions + min(left[0], executions if executions is not None
                                  else int(left[0] * share)),
            self.steps + int(left[1] * share),
        )
        try:
            yield
        except _Budget:
            pass
        finally:
            self._stage_end = (options.max_executions, options.max_steps)
        self.report(name)

    def report(self, stage: str) -> None:
        if self.options.progress is None:
            return
        size = self.best.size
        self.options.progress(
            f"shrink: {stage}: best {_count(size.steps, 'step')}, "
            f"{_count(size.preemptions, 'preemption')}, {_count(size.workers, 'worker')} "
            f"({_count(self.executions, 'execution')}, {time.monotonic() - self._t0:.1f} s)")

    def offer(self, candidate: _Candidate) -> bool:
        """Keep ``candidate`` if it is smaller than the best so far and no bigger than the input."""
        size = candidate.size
        if size.key() < self.best.size.key() and size.within(self.limit):
            self.best = candidate
            return True
        return False

    def run(self, scenario: Scenario, strategy: Strategy, plan: PhasePlan) -> ExecutionOutcome:
        seconds = self.options.max_seconds
        if (self.executions >= self._stage_end[0] or self.steps >= self._stage_end[1]
                or (seconds is not None and time.monotonic() - self._t0 >= seconds)):
            raise _Budget
        self.executions += 1
        if plan.step_limit is None:
            plan = replace(plan, step_limit=self.step_limit)
        outcome = self.session(scenario).execute(strategy, strategy.next_u64(), plan)
        self.steps += len(outcome.steps)
        return outcome

    @property
    def step_limit(self) -> int:
        """A candidate far longer than the best is not wanted."""
        return min(2 * len(self.best.outcome.steps) + 200, self._max_steps)

    def fails(self, outcome: ExecutionOutcome) -> bool:
        """The same failure: the same invariant broke (its fields may name other objects)."""
        found = outcome.principal_violation
        return outcome.failed and found is not None and (
            found.invariant == self.bundle.violation.invariant)

    def guided(self, scenario: Scenario, deviations: Deviations, seed: int, plan: PhasePlan
               ) -> _Candidate | None:
        strategy = Guided(deviations, seed)
        strategy.new_execution()
        outcome = self.run(scenario, strategy, plan)
        if not self.fails(outcome):
            return None
        return _Candidate(scenario, tuple(strategy.applied), outcome, plan)


def shrink_bundle(bundle: Bundle, options: ShrinkOptions | None = None) -> ShrinkReport | None:
    """Shrink ``bundle``; None if it does not reproduce in the first place."""
    options = options or ShrinkOptions()
    t0 = time.monotonic()
    original = replay_bundle(bundle, record=False, pin=options.pin)
    if original.verdict is not Verdict.REPRODUCED:
        return None
    config = original.result.config
    start = Scenario(dict(config.counts), dict(config.params))
    before = _size(start, original.outcome)
    recorded = PhasePlan(len(bundle.steps) + 1, forced=bundle.phase_changes)
    fallback = _Candidate(start, original.deviations, original.outcome, recorded)
    search = _Search(bundle, options, fallback, before)
    try:
        with search.stage("the recorded schedule as deviations", 1.0, executions=2):
            seed = bundle.execution_seed
            free_plan = PhasePlan(bundle.phase_changes[0] if bundle.phase_changes
                                  else len(bundle.steps) + 1)
            baseline = search.guided(start, original.deviations, seed, free_plan)
            if baseline is None:  # the failure needs the recorded phase changes
                baseline = search.guided(start, original.deviations, seed, recorded)
            if baseline is not None and baseline.size.within(before):
                search.best = baseline  # the same schedule, now as deviations to work on
        # cheap first: a short failing schedule found afresh beats a long recorded one
        with search.stage("short search", 0.3):
            _short_search(search, start, options.search_executions)
        with search.stage("smaller scenarios", 0.4):
            _smaller_scenarios(search, max(2, options.search_executions // 4))
        if search.best.scenario != start:  # the smaller scenario earns a longer search
            with search.stage("short search in the smaller scenario", 0.5):
                _short_search(search, search.best.scenario, options.search_executions)
        with search.stage("fewer deviations and switches", 0.5):
            _polish(search, search.best)
        with search.stage("fewer preemptions", 1.0, executions=options.search_executions):
            _fewer_preemptions(search)
    finally:
        search.close()
    best = search.best
    shrunk = _bundle_of(bundle, best)
    replayed = replay_bundle(shrunk, pin=options.pin)
    replays = 2  # the original's and the shrunk bundle's
    if replayed.verdict is not Verdict.REPRODUCED:  # cannot happen for a deterministic tracker
        shrunk, replayed, best = bundle, replay_bundle(bundle, pin=options.pin), fallback
        replays += 1
    return ShrinkReport(
        bundle=shrunk,
        before=before,
        after=best.size,
        executions=search.executions + replays,
        elapsed_s=time.monotonic() - t0,
        replay=replayed,
    )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _ddmin(search: _Search, current: _Candidate) -> _Candidate:
    """Remove deviations while the schedule still fails (complement-based ddmin)."""
    granularity = 2
    while len(current.deviations) >= 2:
        deviations = current.deviations
        chunk = -(-len(deviations) // granularity)
        for index in range(granularity):
            candidate = search.guided(
                current.scenario, deviations[: index * chunk] + deviations[(index + 1) * chunk:],
                current.seed, current.plan)
            if candidate is not None and candidate.size.key() <= current.size.key():
                current = candidate
                search.offer(current)
                granularity = max(granularity - 1, 2)
                break
        else:
            if granularity >= len(deviations):
                break
            granularity = min(granularity * 2, len(deviations))
    if len(current.deviations) == 1:
        candidate = search.guided(current.scenario, (), current.seed, current.plan)
        if candidate is not None and search.offer(candidate):
            current = candidate
    return current


def _fewer_switches(search: _Search, current: _Candidate) -> _Candidate:
    """Drop one worker's block of steps at a time (``strategies.blocks``) while the schedule
    still fails: the context switches ddmin cannot take out, because dropping a deviation
    shifts every later one (a spinner that looks again after each step of a busy worker
    costs a preemption per look; PCT's ``aside`` rule and random walk make many). Then
    trim blocks (``_trimmed``): a worker that ran many operations before the race began
    need run only the last of them."""
    index = 0
    while index < len(blocks := blocks_of(current.outcome.steps)):
        found = _via_blocks(search, current.scenario, without_block(blocks, index),
                            current.seed, current.plan)
        if found is not None and found.size.key() < current.size.key():
            current = found
            search.offer(current)
            continue  # the block now at ``index`` is another one: try it too
        index += 1
    index = 0
    while index < len(blocks := blocks_of(current.outcome.steps)):
        for trimmed in _trimmed(current.outcome.steps, blocks, index):
            found = _via_blocks(search, current.scenario, trimmed, current.seed, current.plan)
            if found is not None and found.size.key() < current.size.key():
                current = found
                search.offer(current)
                break
        index += 1
    return current


def _trimmed(steps: tuple[Step, ...], blocks: tuple[Block, ...], index: int
             ) -> Iterator[tuple[Block, ...]]:
    """``blocks`` with block ``index`` cut short, shortest first, each cut ending at the label
    the block ends at: the worker stops where it stopped, but after fewer rounds of its loop
    (a worker that went round six times before another moved goes round once)."""
    start = sum(count for _, count in blocks[:index])
    worker, count = blocks[index]
    last = steps[start + count - 1].label
    for end in range(start, start + count - 1):
        if steps[end].label == last:
            yield (*blocks[:index], (worker, end - start + 1), *blocks[index + 1:])


def _polish(search: _Search, candidate: _Candidate) -> None:
    """Everything that shortens a failing schedule without searching afresh."""
    _shorter_churn(search, _fewer_switches(search, _ddmin(search, candidate)))


def _shorter_churn(search: _Search, current: _Candidate) -> None:
    """Cut the run phase of ``current``: binary search for the shortest one under which its
    deviations still fail. Fewer operations begun means a shorter schedule and a smaller
    state to explain; not monotone in general, so every length tried is offered."""
    if current.plan.forced:  # phases forced as recorded: try them free first
        candidate = search.guided(current.scenario, current.deviations, current.seed,
                                  PhasePlan(current.plan.forced[0]))
        if candidate is None:
            return
        search.offer(candidate)
        current = candidate
    low, high = _CHURN_FLOOR, min(current.plan.run_steps, len(current.outcome.steps))
    while low < high:
        middle = (low + high) // 2
        plan = PhasePlan(middle, step_limit=current.plan.step_limit)
        candidate = search.guided(current.scenario, current.deviations, current.seed, plan)
        if candidate is not None:
            search.offer(candidate)
            high = middle
        else:
            low = middle + 1


def _rungs(search: _Search, scenario: Scenario) -> Iterator[PhasePlan]:
    """Step bounds 8, 16, 32...: while a schedule within the bound could cost less than the
    best so far (one of over half the bound's steps, with fewer preemptions), with a quarter
    of the bound as run phase."""
    bound = _FIRST_RUNG
    while bound // 2 < search.best.size.cost and bound <= search.step_limit:
        yield PhasePlan(max(1, bound // _RUN_SHARE), step_limit=bound)
        bound *= 2


def _explorers(search: _Search, scenario: Scenario, bound: int) -> list[Strategy]:
    """PCT at depths 2 and 3 with either spin rule (``demote`` finds ordering races fast,
    ``aside`` the ones where a spinner must see an update at once), random walk, and a
    bounded exhaustive search (systematic where the space is small)."""
    seed, workers = search.bundle.seed, scenario.workers
    return [Pct(seed, 2, workers, bound), Pct(seed, 3, workers, bound, spin="aside"),
            RandomWalk(seed), Pct(seed, 3, workers, bound),
            Pct(seed, 4, workers, bound, spin="aside"), Exhaustive(seed, 2)]


def _short_search(search: _Search, scenario: Scenario, executions: int) -> None:
    """Fresh failing schedules within ever longer step bounds (``_rungs``), every explorer
    taking turns; each found one is canonicalised, its deviations and churn cut."""
    for plan in _rungs(search, scenario):
        assert plan.step_limit is not None
        live = _explorers(search, scenario, plan.step_limit)
        for turn in range(executions):
            if not live:
                break
            strategy = live[turn % len(live)]
            if not strategy.new_execution():
                live.remove(strategy)
                continue
            outcome = search.run(scenario, strategy, plan)
            if search.fails(outcome) and (
                    _size(scenario, outcome).key() < search.best.size.key()):
                candidate = _canonical(search, scenario, outcome, plan)
                if candidate is not None and search.offer(candidate):
                    _polish(search, candidate)


def _smaller_scenarios(search: _Search, executions: int) -> None:
    """Fewer workers of a role, lower parameters: keep each change that shrinks the result.

    The best schedule is carried over first as deviations, then as blocks of each worker's
    steps (which survive a scenario whose operations take a few steps more or less), and
    only then searched afresh."""
    tracker_cls = load(search.bundle.tracker)
    improved = True
    while improved:
        improved = False
        best = search.best
        for scenario, dropped in _scenario_candidates(tracker_cls, best.scenario):
            candidate = search.guided(scenario, _remap_deviations(best.deviations, dropped),
                                      best.seed, best.plan)
            if candidate is None or not search.offer(candidate):
                candidate = _via_blocks(
                    search, scenario, _remap_blocks(blocks_of(best.outcome.steps), dropped),
                    best.seed, best.plan)
                if candidate is not None and not search.offer(candidate):
                    candidate = None
            if candidate is not None:
                _polish(search, candidate)
            else:
                _short_search(search, scenario, executions)
            if search.best is not best:
                improved = True
                break


def _scenario_candidates(
    tracker_cls: type[Tracker], scenario: Scenario
) -> list[tuple[Scenario, int | None]]:
    """Each scenario one change smaller, with the worker it drops (None: the same workers)."""
    found: list[tuple[Scenario, int | None]] = []
    counts = dict(scenario.counts)
    first = 0
    for role in tracker_cls.roles:
        if counts[role] > 1:
            dropped = first + counts[role] - 1
            fewer = Scenario(counts | {role: counts[role] - 1}, scenario.params)
            found.append((fewer, dropped))
        first += counts[role]
    for name, parameter in tracker_cls.parameters.items():
        value = scenario.params[name]
        for lower in dict.fromkeys((parameter.minimum, (value + parameter.minimum) // 2,
                                    value - 1)):
            if parameter.minimum <= lower < value:
                found.append((Scenario(counts, dict(scenario.params) | {name: lower}), None))
    return found


def _remap_deviations(deviations: Deviations, dropped: int | None) -> Deviations:
    if dropped is None:
        return deviations
    return tuple((step, worker - (worker > dropped)) for step, worker in deviations
                 if worker != dropped)


def _remap_blocks(blocks: tuple[Block, ...], dropped: int | None) -> tuple[Block, ...]:
    if dropped is None:
        return blocks
    kept = [(worker - (worker > dropped), count) for worker, count in blocks
            if worker != dropped]
    merged: list[Block] = []
    for worker, count in kept:
        if merged and merged[-1][0] == worker:
            merged[-1] = (worker, merged[-1][1] + count)
        else:
            merged.append((worker, count))
    return tuple(merged)


def _via_blocks(search: _Search, scenario: Scenario, blocks: tuple[Block, ...], seed: int,
                plan: PhasePlan) -> _Candidate | None:
    """The candidate the schedule ``blocks`` gives, if it still fails."""
    strategy = Blocks(blocks, seed)
    strategy.new_execution()
    outcome = search.run(scenario, strategy, plan)
    if not search.fails(outcome):
        return None
    return _canonical(search, scenario, outcome, plan)


def _fewer_preemptions(search: _Search) -> None:
    """Search every schedule with fewer preemptions than the best, smallest bound first."""
    best = search.best
    for bound in range(best.size.preemptions):
        strategy = Exhaustive(0, bound, execution_seed=best.seed)
        while strategy.new_execution():
            outcome = search.run(best.scenario, strategy, best.plan)
            if search.fails(outcome) and outcome.preemptions < best.size.preemptions:
                candidate = _canonical(search, best.scenario, outcome, best.plan)
                if candidate is not None and search.offer(candidate):
                    _polish(search, candidate)
                return


def _canonical(search: _Search, scenario: Scenario, outcome: ExecutionOutcome,
               plan: PhasePlan) -> _Candidate | None:
    """The deviations of a schedule found under ``plan`` (by replaying it once)."""
    replay = Replay(outcome.steps, outcome.execution_seed)
    replay.new_execution()
    again = search.run(scenario, replay, PhasePlan(plan.run_steps, forced=outcome.phase_changes,
                                                   step_limit=plan.step_limit))
    if not search.fails(again):
        return None
    return search.guided(scenario, tuple(replay.deviations), outcome.execution_seed, plan)


def _bundle_of(original: Bundle, best: _Candidate) -> Bundle:
    outcome = best.outcome
    found = outcome.principal_violation
    assert found is not None
    same_scenario = (dict(best.scenario.counts), dict(best.scenario.params)) == (
        dict(original.counts), dict(original.params))
    return replace(
        original,
        execution_seed=best.seed,
        counts=dict(best.scenario.counts),
        params=dict(best.scenario.params),
        strategy=ShrunkSpec(),
        phase_changes=outcome.phase_changes,
        steps=outcome.steps,
        preemptions=outcome.preemptions,
        violation=ExpectedViolation.of(found),
        code_sha256=original.code.digest(),  # the file it failed with now (--allow-changed)
        # a log's names (import-log) stand for the model's objects of the bundle's scenario;
        # a smaller scenario makes other objects under those names
        names=dict(original.names) if same_scenario else {},
    )
