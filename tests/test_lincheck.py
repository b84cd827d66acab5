"""lincheck (issue 31): Hypothesis draws the program and the schedule, the plain engine runs
them, the history is checked for linearizability. The parts on their own first (no process),
then the racy and the locked counter end to end; every example's search is in
``test_lincheck_examples.py`` (nightly)."""

from __future__ import annotations

import copy
import multiprocessing as mp
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import hypothesis
import pytest
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from shmstress.analysis.linearizability import Raised
from shmstress.controlled.strategies.base import ScheduleEnded
from shmstress.controlled.strategies.drawn import (
    CHANGE_POINTS,
    HORIZON,
    PACES,
    PATIENT,
    PATIENT_PACE,
    PRIORITIES,
    RANKS,
    RELEASED,
    UNIFORM,
    Drawn,
)
from shmstress.core.errors import ConcurrencyFailure, ConfigError
from shmstress.plain.runner import replay
from shmstress.repro.plain_bundle import peek_plain
from shmstress.testing import linearizable
from shmstress.testing.lincheck.check import (
    LincheckFailure,
    check_linearizable,
    lincheck_settings,
)
from shmstress.testing.lincheck.declaration import Operations, declared, operation
from shmstress.testing.lincheck.execution import perform
from shmstress.testing.lincheck.program import Call, Program, Shape, program_of, programs
from shmstress.testing.lincheck.report import clean_lines
from shmstress.testing.lincheck.sequential_model import SequentialModel

ROOT = Path(__file__).resolve().parent.parent
COUNTER = ROOT / "examples" / "lincheck" / "counter.py"
RACY = f"{COUNTER}:RacyCounter"
LOCKED = f"{COUNTER}:LockedCounter"
SEED = 1  # Hypothesis' seed in the tests that search: the same examples on every run


# -- the parts ------------------------------------------------------------------------------
ARGUMENTS = st.one_of(st.integers(), st.text(max_size=3), st.none(), st.booleans(),
                      st.tuples(st.integers(), st.binary(max_size=2)))


@hypothesis.settings(deadline=None)
@hypothesis.given(programs(Operations((("put", (ARGUMENTS, ARGUMENTS)), ("get", ()))),
                           Shape(lanes=3, ops=3)))
def test_a_program_reads_back_from_its_text(program: Program) -> None:
    assert program_of(program.to_text()) == program
    assert 2 <= len(program.lanes) <= 3 and 1 <= program.widest <= 3


def test_a_program_holds_literals_only() -> None:
    with pytest.raises(ConfigError, match="literals"):
        Program((), ((Call("put", (object(),)),), (Call("get"),))).to_text()
    with pytest.raises(ConfigError, match="not a lincheck program"):
        program_of("__import__('os').getcwd()")


class Marked:
    @operation(st.integers(0, 3))
    def put(self, item: int) -> None: ...

    @operation()
    def get(self) -> None: ...

    def helper(self) -> None: ...


class ShortForm:
    operations = {"put": st.integers(0, 3), "swap": (st.integers(), st.integers()),  # noqa: RUF012
                  "get": None}

    def put(self, item: int) -> None: ...
    def swap(self, a: int, b: int) -> None: ...
    def get(self) -> None: ...


class MarkedTwin(Marked):
    def put(self, item: int) -> None: ...  # unmarked here: its base's mark holds


class ShortFormTwin(ShortForm):
    pass


def test_operations_are_declared_in_three_ways_and_inherited() -> None:
    assert declared(Marked).names == declared(MarkedTwin).names == ("put", "get")
    assert declared(ShortFormTwin).names == ("put", "swap", "get")
    assert [len(args) for _, args in declared(ShortForm).calls] == [1, 2, 0]
    assert declared(ShortForm, {"get": None}).names == ("get",)
    with pytest.raises(ConfigError, match="declares no operation"):
        declared(int)
    with pytest.raises(ConfigError, match="no method 'pop'"):
        declared(Marked, {"pop": None})


@dataclass
class View:
    runnable: list[int]
    current: int = 0
    current_can_continue: bool = True
    step: int = 0
    workers: int = 3
    asked: list[int] = field(default_factory=list)

    labels: dict[int, str] = field(default_factory=dict)

    def label(self, worker: int) -> str:
        return self.labels.get(worker, "x")

    def who(self, worker: int) -> str:
        return f"#{worker}"

    def describe(self, worker: int) -> str:
        return "here"


def test_drawn_choice_zero_is_the_schedule_without_preemptions() -> None:
    asked, choose = _answering(UNIFORM, 0, 1, 2)  # the pace, then each option in turn
    drawn = Drawn(choose)
    assert drawn.new_execution() and not drawn.new_execution()
    view = View([0, 1, 2], current=1)
    assert [drawn.next_task(view)[0] for _ in range(3)] == [1, 0, 2]
    assert drawn.next_task(View([2], current=2))[0] == 2  # one candidate: nothing drawn
    assert asked == [PACES, 3, 3, 3] and drawn.decisions == 3 and drawn.pace == 0


def _answering(*answers: int) -> tuple[list[int], Callable[[int], int]]:
    asked: list[int] = []
    given = iter(answers)

    def choose(options: int) -> int:
        asked.append(options)
        value = next(given)
        assert 0 <= value < options
        return value
    return asked, choose


def test_a_patient_pace_preempts_on_its_top_values_and_more_often_after_a_release() -> None:
    asked, choose = _answering(PATIENT_PACE, PATIENT - 2, PATIENT - 1, 1, RELEASED - 1)
    drawn = Drawn(choose)
    view = View([0, 1], current=0)
    assert drawn.next_task(view)[0] == 0  # the highest value that goes on
    assert drawn.next_task(view)[0] == 1  # the top value switches
    released = View([0, 1], current=1, labels={1: "release lock"})
    assert drawn.next_task(released)[0] == 1  # goes on, to take the release
    assert drawn.next_task(View([0, 1], current=1))[0] == 0  # then the top of fewer values
    assert asked == [PACES, PATIENT, PATIENT, PATIENT, RELEASED]


def test_the_priorities_pace_runs_the_highest_rank_and_drops_it_at_a_change_point() -> None:
    # pace, one change point at decision 1, then the ranks of workers 0, 1 and 2
    asked, choose = _answering(PRIORITIES, 1, 1, 0, 5, 0)
    drawn = Drawn(choose)
    view = View([0, 1], current=0)
    assert drawn.next_task(view)[0] == 1  # ranked above the one that could go on
    assert drawn.next_task(View([0, 1], current=1))[0] == 0  # the change point drops it
    assert drawn.next_task(View([0, 1, 2], current=0))[0] == 0  # worker 2 ranks 0: equal
    assert asked == [PACES, CHANGE_POINTS + 1, HORIZON, RANKS, RANKS, RANKS]


def test_the_priorities_pace_at_all_zeros_is_the_schedule_without_preemptions() -> None:
    asked, choose = _answering(PRIORITIES, 0, 0, 0, 0)  # no change point, three ranks
    drawn = Drawn(choose)
    assert [drawn.next_task(View([0, 1, 2], current=c))[0] for c in (1, 1, 1)] == [1, 1, 1]
    assert drawn.next_task(View([0, 2], current=1, current_can_continue=False))[0] == 2
    assert asked == [PACES, CHANGE_POINTS + 1, RANKS, RANKS, RANKS]


def test_drawn_stops_the_execution_and_raises_afterwards() -> None:
    class Stop(BaseException):
        pass

    def choose(options: int) -> int:
        raise Stop

    drawn = Drawn(choose)
    with pytest.raises(ScheduleEnded):
        drawn.next_task(View([0, 1]))
    with pytest.raises(ScheduleEnded):  # no more draws once stopped
        drawn.next_task(View([0, 1]))
    with pytest.raises(Stop):
        drawn.raise_interruption()


class SharedCounter:
    def __init__(self) -> None:
        self.count = mp.Value("i", 0, lock=False)

    def add(self, amount: int) -> int:
        self.count.value += amount
        return int(self.count.value)


def test_the_sequential_model_copies_by_its_calls_and_keys_by_its_memory() -> None:
    one, two = SequentialModel(SharedCounter), SequentialModel(SharedCounter)
    assert one.add(1) == 1 and one.add(2) == 3
    assert two.add(2) == 2 and two.add(1) == 3
    assert one.__shmstress_state__() == two.__shmstress_state__()  # same memory, other order
    copied = copy.deepcopy(one)
    assert copied.add(4) == 7 and one.add(1) == 4  # the copy is apart from the original


class Guarded:
    def pop(self) -> int:
        raise IndexError("empty")

    def check(self) -> None:
        raise AssertionError("the object's own invariant")


def test_an_exception_is_a_result_but_a_failed_assert_fails_the_execution() -> None:
    popped = perform(Guarded(), Call("pop"), 1)
    assert popped.result == Raised("IndexError") and popped.process == 1
    with pytest.raises(AssertionError, match="own invariant"):
        perform(Guarded(), Call("check"), 1)


def test_lincheck_lifts_the_default_deadline_only() -> None:
    assert lincheck_settings(hypothesis.settings(deadline=200)).deadline is None
    kept = lincheck_settings(hypothesis.settings(deadline=1000, max_examples=7))
    assert kept.deadline is not None and kept.max_examples == 7
    assert hypothesis.Phase.explain not in kept.phases


# -- end to end -----------------------------------------------------------------------------
def test_the_racy_counter_fails_shrunk_and_replays_from_database_and_bundle(
        tmp_path: Path) -> None:
    """The small shape keeps it quick (each example's search: the nightly examples' test).
    No seed: Hypothesis turns its database off for a seeded test."""
    database = DirectoryBasedExampleDatabase(str(tmp_path / "examples"))
    small = {"lanes": 2, "ops": 2, "prefix": 0, "suffix": 0}
    with pytest.raises(LincheckFailure) as first:
        check_linearizable(RACY, **small, settings=hypothesis.settings(database=database),
                           out=tmp_path / "out")
    result, files = first.value.result, first.value.files
    failing = result.failing
    assert failing is not None and files.bundle is not None
    assert len(failing.program.lanes) == 2 and failing.program.widest == 1
    message = str(first.value)
    assert "= Invalid execution results =" in message and "the interleaving" in message
    assert f"shmstress replay {files.bundle.absolute()}" in message

    # Hypothesis' database: the stored example alone, and it is the same execution
    stored_only = hypothesis.settings(database=database, phases=[hypothesis.Phase.reuse])
    with pytest.raises(LincheckFailure) as again:
        check_linearizable(RACY, **small, settings=stored_only, out=tmp_path / "out")
    stored = again.value.result
    assert stored.tally.first_failure == 1
    assert stored.failing is not None and stored.failing.program == failing.program
    assert [s.step for s in stored.failing.outcome.steps] == \
        [s.step for s in failing.outcome.steps]

    # the bundle: its scenario file and its steps bring the same failure back
    bundle = peek_plain(files.bundle)
    assert bundle is not None
    replayed = replay(bundle.spec(), bundle.steps, bundle.execution_seed)
    assert replayed.failed and replayed.failure is not None
    assert replayed.failure.message == failing.outcome.failure.message  # type: ignore[union-attr]
    assert [s.step for s in replayed.steps] == [s.step for s in failing.outcome.steps]


def test_the_locked_counter_passes() -> None:
    result = check_linearizable(LOCKED, settings=hypothesis.settings(max_examples=15,
                                                                     database=None), seed=SEED)
    assert result.failing is None and result.tally.executions >= 15


ran: list[str] = []


@linearizable(LOCKED, lanes=2, ops=2, settings=hypothesis.settings(max_examples=5,
                                                                   database=None), seed=SEED)
def checked_then_run() -> None:
    ran.append("body")


def test_the_decorator_checks_and_then_runs_the_test_body() -> None:
    checked_then_run()
    assert ran == ["body"]


def shmstress(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shmstress", *args], capture_output=True,
                          text=True, timeout=900, check=False)


def test_the_command_line_says_how_and_refuses_bad_input(tmp_path: Path) -> None:
    helped = shmstress("lincheck", "--help")
    assert helped.returncode == 0 and "shmstress lincheck examples/lincheck/counter.py" in \
        helped.stdout
    refused = shmstress("lincheck", RACY, "--lanes", "1")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "--lanes must be at least 2" in refused.stderr


def test_the_command_line_finds_the_racy_counter(tmp_path: Path) -> None:
    found = shmstress("lincheck", RACY, "--lanes", "2", "--ops", "1", "--prefix", "0",
                      "--suffix", "0", "--hypothesis-seed", str(SEED), "--out", str(tmp_path))
    assert found.returncode == 1, found.stderr
    assert "= Invalid execution results =" in found.stdout
    assert "replay it: shmstress replay " in found.stdout
    assert list(tmp_path.glob("lincheck-RacyCounter*.json"))


# -- no verdict where the search could not judge --------------------------------------------
UNJUDGED = ROOT / "tests" / "scenarios" / "lincheck_unjudged.py"


def test_code_outside_control_leaves_no_verdict_unless_accepted(tmp_path: Path) -> None:
    """A thread inside an operation runs beside the scheduler: "linearizable" would claim
    what the search did not see (it printed that and exited 0)."""
    command = [sys.executable, "-m", "shmstress", "lincheck", f"{UNJUDGED}:Threaded",
               "--max-examples", "5", "--no-database", "--hypothesis-seed", "1",
               "--out", str(tmp_path)]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert refused.returncode == 6, refused.stdout + refused.stderr
    assert "no verdict: code outside control ran" in refused.stdout
    assert "started thread" in refused.stdout and "linearizable in" not in refused.stdout
    accepted = subprocess.run([*command, "--accept-uncontrolled"], capture_output=True,
                              text=True, timeout=300, check=False)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "linearizable in every one of" in accepted.stdout and "accepted" in accepted.stdout

    settings = hypothesis.settings(max_examples=5, database=None)
    with pytest.raises(ConcurrencyFailure, match="no verdict: code outside control ran"):
        check_linearizable(f"{UNJUDGED}:Threaded", settings=settings, seed=SEED)
    result = check_linearizable(f"{UNJUDGED}:Threaded", settings=settings, seed=SEED,
                                accept_uncontrolled=True)
    assert result.failing is None and result.tally.uncontrolled


def test_an_execution_cut_at_max_steps_is_no_example_of_a_linearizable_object() -> None:
    """Its program never checked its history: the search rejects it and says how many."""
    result = check_linearizable(f"{UNJUDGED}:SometimesLong", lanes=2, ops=1, prefix=0,
                                suffix=0, max_steps=120, seed=SEED,
                                settings=hypothesis.settings(max_examples=20, database=None))
    tally = result.tally
    cut = tally.ends.get("step-bound", 0)
    assert cut > 0 and tally.unjudged_examples >= cut, tally.ends
    assert tally.examples - tally.unjudged_examples >= 20
    assert tally.unjudged() == f"{cut} reached --max-steps"
    lines = clean_lines(result, 1.0)
    assert lines[0].endswith("linearizable in every one of "
                             f"{tally.examples - tally.unjudged_examples} examples "
                             f"({tally.executions} executions) in 1.0 s"), lines
    assert lines[1] == (f"  no verdict from some executions: {cut} reached --max-steps (their "
                        "programs never checked their history); Hypothesis drew other "
                        "examples instead"), lines


def test_a_search_of_nothing_but_cut_executions_says_why_hypothesis_stopped(
        tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "shmstress", "lincheck", f"{UNJUDGED}:SometimesLong",
         "--max-steps", "5", "--max-examples", "5", "--no-database", "--hypothesis-seed", "1",
         "--lanes", "2", "--ops", "1", "--prefix", "0", "--suffix", "0", "--out",
         str(tmp_path)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "Hypothesis stopped the search" in done.stderr
    assert "reached --max-steps, in" in done.stderr, done.stderr
