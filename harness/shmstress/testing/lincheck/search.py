"""The search: Hypothesis draws a program and its schedule, the plain engine runs them.

One Hypothesis example is one execution: the program (``program.programs``) and, at every
step where more than one process can go, the choice of which one
(``controlled.strategies.drawn``). The coordinator that asks "who next" is the plain
session's, in this process, the one Hypothesis runs the test in: so each choice is a draw
made when the engine needs it, and the example's choice sequence is the whole (program,
schedule) pair. Hypothesis' shrinker therefore shrinks both together, and its database,
replaying the sequence, replays the execution exactly.

One session serves every example: its host imported the class once, and each execution
reads its program from a file the search rewrites before it (``scenario_file``).

``per_program`` swaps the drawn schedule for the portfolio: each drawn program is explored
for that many executions, as ``shmstress test`` would explore a hand-written scenario (the
comparison of the two is in the tutorial).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import hypothesis
import hypothesis.errors
from hypothesis import given, settings
from hypothesis import strategies as st

from shmstress.controlled.strategies import DEFAULT, exploring_strategy, spec_named
from shmstress.controlled.strategies.base import Strategy, StrategySpec, current_spec
from shmstress.controlled.strategies.drawn import Drawn
from shmstress.core.errors import LincheckSearchError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.files import write_text_atomically
from shmstress.core.plurals import counted
from shmstress.core.shm import sweep_stale_segments
from shmstress.plain.outcome import PlainEnd, PlainOutcome
from shmstress.plain.scenario import ScenarioRef, traced_code
from shmstress.plain.session import PlainSession
from shmstress.plain.spec import PlainSpec
from shmstress.testing.lincheck.declaration import Operations
from shmstress.testing.lincheck.program import Program, Shape, programs
from shmstress.testing.lincheck.scenario_file import (
    FUNCTION,
    TargetNames,
    search_source,
    write_program,
)

_NO_VERDICT = {
    PlainEnd.HUNG: "hung (a process did not reach its next point in time)",
    PlainEnd.STEP_BOUND: "reached --max-steps",
    PlainEnd.LIMIT: "hit a limit of shmstress",
}
"""The ends of an execution whose program never checked its history, in words: the search
rejects its example. (Hypothesis also stops examples mid-way, when their draws run out, as
it replays a prefix of choices: it counts those itself, and so do the tally's examples.)"""

EXECUTION_SEED = 0
"""Every execution's seed (the processes' ``random``): the schedule is the example's."""
MAX_OBJECTS = 4096
"""Room in the object table: the sequential model's objects are made in ``main`` too."""


class ExampleFailed(AssertionError):  # noqa: N818 - what Hypothesis sees of a failing example
    """An example's execution failed; the search keeps the outcome and reports it once."""


@dataclass(frozen=True)
class Plan:
    """What to search: the class, its operations, the programs' shape, the bounds."""

    names: TargetNames
    operations: Operations
    shape: Shape = field(default_factory=Shape)
    max_steps: int = 5000
    per_program: int = 0  # >0: the portfolio explores each program that many times
    trace: tuple[str, ...] = ()

    def spec(self, scenario: Path) -> PlainSpec:
        target = ScenarioRef.parse(self.names.target)
        return PlainSpec(ScenarioRef(str(scenario), FUNCTION),
                         max_processes=self.shape.lanes + 1, max_steps=self.max_steps,
                         max_objects=MAX_OBJECTS, trace=traced_code(target, self.trace))

    def digest(self) -> bytes:
        """What Hypothesis keys the database by, beside the search's own code: the class,
        its operations and the shape (another shape's examples mean other programs)."""
        text = repr((self.names, self.operations.names, self.shape, self.per_program))
        return hashlib.sha256(text.encode()).digest()


@dataclass
class Tally:
    """Examples and executions, and which execution failed first (from 1)."""

    examples: int = 0
    unjudged_examples: int = 0  # with no verdict on the object: rejected or stopped mid-way
    executions: int = 0
    first_failure: int | None = None
    ends: dict[str, int] = field(default_factory=dict)
    uncontrolled: dict[str, int] = field(default_factory=dict)

    def count(self, outcome: PlainOutcome) -> None:
        self.executions += 1
        self.ends[outcome.end.value] = self.ends.get(outcome.end.value, 0) + 1
        for line in outcome.uncontrolled:
            self.uncontrolled[line] = self.uncontrolled.get(line, 0) + 1
        if failed(outcome) and self.first_failure is None:
            self.first_failure = self.executions

    def unjudged(self) -> str:
        """The executions that ended with no verdict on the object, in words ("" if none):
        their programs never reached the check of their history."""
        return ", ".join(f"{self.ends[end.value]:,} {_NO_VERDICT[end]}"
                         for end in _NO_VERDICT if self.ends.get(end.value))


@dataclass(frozen=True)
class Failing:
    """The failing example Hypothesis ended on (its shrunk one): the program, the execution
    and Hypothesis' notes (the falsifying example, ``@reproduce_failure``)."""

    program: Program
    outcome: PlainOutcome
    index: int  # the execution's number in its program's exploration, from 0
    strategy: StrategySpec
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchResult:
    plan: Plan
    tally: Tally
    failing: Failing | None

    def exit_code(self, accept_uncontrolled: bool = False) -> ExitCode:
        """A failure; else no verdict where code outside control ran (unless accepted), as
        ``shmstress test`` says it; else clean."""
        if self.failing is not None:
            return ExitCode.FAILURE
        if self.tally.uncontrolled and not accept_uncontrolled:
            return ExitCode.NOT_CONTROLLED
        return ExitCode.CLEAN


def failed(outcome: PlainOutcome) -> bool:
    return outcome.failed


def search(plan: Plan, chosen: settings, seed: int | None = None) -> SearchResult:
    """Run Hypothesis with ``chosen`` settings over the plan's programs and schedules
    (``seed``: Hypothesis' own, as ``@hypothesis.seed`` gives it)."""
    plan.shape.validate()
    sweep_stale_segments()
    with tempfile.TemporaryDirectory(prefix="shmstress-lincheck-") as folder:
        scenario = Path(folder) / "lincheck_search.py"
        program_file = Path(folder) / "program.txt"
        write_text_atomically(scenario, search_source(plan.names, program_file),
                              "the lincheck scenario")
        with PlainSession(plan.spec(scenario)) as session:
            return _run(plan, chosen, session, program_file, seed)


def _run(plan: Plan, chosen: settings, session: PlainSession, program_file: Path,
         seed: int | None) -> SearchResult:
    tally = Tally()
    found: list[Failing] = []
    choices: dict[int, st.SearchStrategy[int]] = {}

    def choice(data: st.DataObject) -> Callable[[int], int]:
        def draw(options: int) -> int:
            strategy = choices.get(options)
            if strategy is None:
                strategy = choices[options] = st.integers(0, options - 1)
            return data.draw(strategy)
        return draw

    def example(program: Program, data: st.DataObject) -> None:
        tally.examples += 1
        write_program(program_file, program)
        for index, (strategy, outcome) in enumerate(_executions(plan, session, program,
                                                                choice(data))):
            tally.count(outcome)
            if outcome.end in (*_NO_VERDICT, PlainEnd.SCHEDULE_END):
                tally.unjudged_examples += 1
            if outcome.end in _NO_VERDICT:
                # the program never reached the check of its history (a process that did not
                # reach its next point in time, --max-steps, a limit of the board): the
                # example says nothing about the object. Hypothesis draws another instead,
                # and a failure it could not reproduce would stop the search as flaky
                hypothesis.reject()
            if failed(outcome):
                found.append(Failing(program, outcome, index, strategy))
                failure = outcome.failure
                raise ExampleFailed(failure.message if failure else outcome.end.value)

    # Hypothesis keys its database by the test function's source, the same for every plan:
    # the plan's digest tells one class's stored examples from another's
    vars(example)["_hypothesis_internal_add_digest"] = plan.digest()
    test: Any = given(program=programs(plan.operations, plan.shape), data=st.data())(example)
    test = chosen(test)
    if seed is not None:
        test = hypothesis.seed(seed)(test)
    try:
        test()
    except ExampleFailed as caught:
        return SearchResult(plan, tally, replace(
            found[-1], notes=tuple(getattr(caught, "__notes__", ()))))
    except hypothesis.errors.HypothesisException as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip()
        unjudged = tally.unjudged()
        why = f" ({unjudged}, in {counted(tally.executions, 'execution')})" if unjudged else ""
        raise LincheckSearchError(f"Hypothesis stopped the search: {first}{why}") from exc
    return SearchResult(plan, tally, None)


def _executions(plan: Plan, session: PlainSession, program: Program,
                draw: Callable[[int], int]) -> Iterator[tuple[StrategySpec, PlainOutcome]]:
    """The example's executions: one on the drawn schedule, or the portfolio's, each with
    the spec a bundle stores for it."""
    if not plan.per_program:
        drawn = Drawn(draw, EXECUTION_SEED)
        drawn.new_execution()
        outcome = session.execute(drawn, EXECUTION_SEED)
        yield drawn.spec, outcome  # counted, even when Hypothesis stopped it part way
        drawn.raise_interruption()
        return
    seed = int.from_bytes(hashlib.sha256(program.to_text().encode()).digest()[:7], "big")
    portfolio: Strategy = exploring_strategy(spec_named(DEFAULT), seed,
                                             plan.shape.lanes + 1, plan.max_steps, "plain")
    for _ in range(plan.per_program):
        if not portfolio.new_execution():
            return
        outcome = session.execute(portfolio, portfolio.next_u64())
        yield current_spec(portfolio), outcome
