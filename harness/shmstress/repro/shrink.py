"""Shrinking a failing schedule: fewest preemptions, then steps, then workers and scenario.

A schedule is rewritten as its *deviations* from the schedule without
preemptions (``strategies.base.default_choice``); replaying the deviations
under the ``guided`` strategy gives the schedule back. Shrinking then works on
such lists, keeping a candidate only if it still breaks the same invariant:

1. a short search (PCT, then random walk, with a short run phase) looks for a
   fresh failing schedule: far shorter than one recorded in a long free run;
2. smaller scenarios are tried (one worker fewer of a role, each parameter
   lowered), first with the deviations of the remaining workers, then with a
   short search;
3. delta debugging (Zeller and Hildebrandt, TSE 2002) removes deviations from
   every candidate kept;
4. a bounded exhaustive search looks for a schedule with fewer preemptions
   than the best so far.

Candidates are compared by (preemptions, steps, workers, scenario size). Each
step of the search has its share of a budget of executions and of steps, so
a long schedule cannot starve the later steps. Every execution is
deterministic for its seed and every random draw comes from strategies seeded
by the bundle's seed, in the coordinator, so shrinking the same bundle twice
gives the same result.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

from shmstress.controlled.execution import ExecutionOutcome, PhasePlan
from shmstress.controlled.runner import prepare, session_spec
from shmstress.controlled.session import Session
from shmstress.controlled.strategies import Exhaustive, Guided, Pct, RandomWalk, Replay
from shmstress.controlled.strategies.base import Strategy, StrategySpec
from shmstress.core.config import RunConfig
from shmstress.plugin.registry import load
from shmstress.plugin.tracker import Tracker
from shmstress.repro.bundle import Bundle, ExpectedViolation
from shmstress.repro.replay import ReplayReport, Verdict, replay_bundle

Deviations = tuple[tuple[int, int], ...]


_SHORT_RUN_STEPS = 100


@dataclass(frozen=True)
class ShrinkOptions:
    max_executions: int = 3000
    max_steps: int = 3_000_000  # steps over all executions: long schedules cost more
    search_executions: int = 200  # PCT and random-walk executions looking for a shorter one
    pin: bool = True


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

    def key(self) -> tuple[int, int, int, int]:
        return (self.preemptions, self.steps, self.workers, self.scenario_size)


@dataclass(frozen=True)
class _Candidate:
    scenario: Scenario
    deviations: Deviations
    outcome: ExecutionOutcome

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
    """The search spent its executions."""


class _Search:
    """Runs candidates; keeps one session open (the scenario last used)."""

    def __init__(self, bundle: Bundle, options: ShrinkOptions, best: _Candidate) -> None:
        self.bundle = bundle
        self.options = options
        self.best = best
        self.executions = 0
        self.steps = 0
        self._stage_end = (options.max_executions, options.max_steps)
        self._session: Session | None = None
        self._session_of: Scenario | None = None
        self._max_steps = max(len(bundle.steps) * 2, 1000)
        self.plan = PhasePlan(bundle.phase_changes[0] if bundle.phase_changes
                              else len(bundle.steps) + 1)

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
    def stage(self, share: float, executions: int | None = None) -> Iterator[None]:
        """A step of the search with ``share`` of what is left of the budget (or a number of
        executions); running out ends only this step."""
        options = self.options
        left = (options.max_executions - self.executions, options.max_steps - self.steps)
        self._stage_end = (
            self.executions + (executions if executions is not None else int(left[0] * share)),
            self.steps + int(left[1] * share),
        )
        try:
            yield
        except _Budget:
            pass
        finally:
            self._stage_end = (options.max_executions, options.max_steps)

    def offer(self, candidate: _Candidate) -> bool:
        """Keep ``candidate`` if it is smaller than the best so far."""
        if candidate.size.key() < self.best.size.key():
            self.best = candidate
            return True
        return False

    def run(self, scenario: Scenario, strategy: Strategy, plan: PhasePlan | None = None
            ) -> ExecutionOutcome:
        if self.executions >= self._stage_end[0] or self.steps >= self._stage_end[1]:
            raise _Budget
        self.executions += 1
        plan = plan or self.plan
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
        found = outcome.principal_violation
        return outcome.failed and found is not None and (
            found.invariant == self.bundle.violation.invariant)

    def guided(self, scenario: Scenario, deviations: Deviations, seed: int
               ) -> _Candidate | None:
        strategy = Guided(deviations, seed)
        strategy.new_execution()
        outcome = self.run(scenario, strategy)
        if not self.fails(outcome):
            return None
        return _Candidate(scenario, tuple(strategy.applied), outcome)


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
    fallback = _Candidate(start, original.deviations, original.outcome)
    search = _Search(bundle, options, fallback)
    try:
        with search.stage(1.0, executions=2):
            seed = bundle.execution_seed
            baseline = search.guided(start, original.deviations, seed)
            if baseline is None:  # the failure needs the recorded phase changes
                search.plan = PhasePlan(search.plan.run_steps, forced=bundle.phase_changes)
                baseline = search.guided(start, original.deviations, seed)
            if baseline is not None:
                search.best = baseline
        # cheap first: a short failing schedule found afresh beats a long recorded one
        with search.stage(0.25, executions=options.search_executions):
            _short_search(search, start, options.search_executions)
        with search.stage(0.4):
            _smaller_scenarios(search, max(2, options.search_executions // 4))
        with search.stage(0.5):
            _ddmin(search, search.best)
        with search.stage(1.0):
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


def _ddmin(search: _Search, current: _Candidate) -> _Candidate:
    """Remove deviations while the schedule still fails (complement-based ddmin)."""
    granularity = 2
    while len(current.deviations) >= 2:
        deviations = current.deviations
        chunk = -(-len(deviations) // granularity)
        for index in range(granularity):
            candidate = search.guided(
                current.scenario, deviations[: index * chunk] + deviations[(index + 1) * chunk:],
                current.seed)
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
        candidate = search.guided(current.scenario, (), current.seed)
        if candidate is not None and search.offer(candidate):
            current = candidate
    return current


def _short_search(search: _Search, scenario: Scenario, executions: int) -> None:
    """PCT, then random-walk executions with a short run phase: a failing schedule found this
    way is often far shorter than one derived from a long recorded run (PCT finds few
    preemptions; random walk finds the races PCT's few change points miss)."""
    depth = max(2, min(search.best.size.preemptions + 1, 4))
    plan = PhasePlan(min(search.plan.run_steps, _SHORT_RUN_STEPS))
    for strategy in (Pct(search.bundle.seed, depth, scenario.workers, search.step_limit),
                     RandomWalk(search.bundle.seed)):
        for _ in range(executions // 2):
            strategy.new_execution()
            outcome = search.run(scenario, strategy, plan)
            if search.fails(outcome) and _size(scenario, outcome).key() < search.best.size.key():
                candidate = _canonical(search, scenario, outcome)
                if candidate is not None and search.offer(candidate):
                    _ddmin(search, candidate)


def _smaller_scenarios(search: _Search, executions: int) -> None:
    """Fewer workers of a role, lower parameters: keep each change that shrinks the result."""
    tracker_cls = load(search.bundle.tracker)
    improved = True
    while improved:
        improved = False
        best = search.best
        for scenario, remap in _scenario_candidates(tracker_cls, best.scenario):
            candidate = search.guided(scenario, remap(best.deviations), best.seed)
            if candidate is not None and search.offer(candidate):
                _ddmin(search, candidate)
            else:
                _short_search(search, scenario, executions)
            if search.best is not best:
                improved = True
                break


def _scenario_candidates(
    tracker_cls: type[Tracker], scenario: Scenario
) -> list[tuple[Scenario, Callable[[Deviations], Deviations]]]:
    found: list[tuple[Scenario, Callable[[Deviations], Deviations]]] = []
    counts = dict(scenario.counts)
    first = 0
    for role in tracker_cls.roles:
        if counts[role] > 1:
            dropped = first + counts[role] - 1
            fewer = Scenario(counts | {role: counts[role] - 1}, scenario.params)
            found.append((fewer, _without_worker(dropped)))
        first += counts[role]
    for name, parameter in tracker_cls.parameters.items():
        value = scenario.params[name]
        for lower in dict.fromkeys((parameter.minimum, (value + parameter.minimum) // 2,
                                    value - 1)):
            if parameter.minimum <= lower < value:
                found.append((Scenario(counts, dict(scenario.params) | {name: lower}),
                              _same_workers))
    return found


def _same_workers(deviations: Deviations) -> Deviations:
    return deviations


def _without_worker(dropped: int) -> Callable[[Deviations], Deviations]:
    def remap(deviations: Deviations) -> Deviations:
        return tuple((step, worker - (worker > dropped)) for step, worker in deviations
                     if worker != dropped)
    return remap


def _fewer_preemptions(search: _Search) -> None:
    """Search every schedule with fewer preemptions than the best, smallest bound first."""
    best = search.best
    for bound in range(best.size.preemptions):
        strategy = Exhaustive(0, bound, execution_seed=best.seed)
        while strategy.new_execution():
            outcome = search.run(best.scenario, strategy)
            if search.fails(outcome) and outcome.preemptions < best.size.preemptions:
                candidate = _canonical(search, best.scenario, outcome)
                if candidate is not None and search.offer(candidate):
                    _ddmin(search, candidate)
                return


def _canonical(search: _Search, scenario: Scenario, outcome: ExecutionOutcome
               ) -> _Candidate | None:
    """The deviations of a found schedule (by replaying it once)."""
    replay = Replay(outcome.steps, outcome.execution_seed)
    replay.new_execution()
    again = search.run(scenario, replay, PhasePlan(search.plan.run_steps,
                                                   forced=outcome.phase_changes))
    if not search.fails(again):
        return None
    return search.guided(scenario, tuple(replay.deviations), outcome.execution_seed)


def _bundle_of(original: Bundle, best: _Candidate) -> Bundle:
    outcome = best.outcome
    found = outcome.principal_violation
    assert found is not None
    return replace(
        original,
        execution_seed=best.seed,
        counts=dict(best.scenario.counts),
        params=dict(best.scenario.params),
        strategy=StrategySpec("shrink"),
        phase_changes=outcome.phase_changes,
        steps=outcome.steps,
        preemptions=outcome.preemptions,
        violation=ExpectedViolation.of(found),
    )
