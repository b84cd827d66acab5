"""The SCTBench ports: every buggy program fails as its C code does, every twin runs clean,
and ``shmstress bench --suite sctbench`` prints its table and writes its JSON.

Budgets are small and the strategy and seed of each search are pinned: controlled
exploration is deterministic for a seed, so a pinned search finds the same failure
in the same execution every time. The pins were picked by scanning seeds (most
programs fail in the first few executions of a random walk; the ``reorder`` family
needs PCT and a seed whose change point lands between a writer's two writes). A
change to a strategy's use of its random numbers may need them picked again; a
failure of the wrong kind never should. No timing assertion.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shmstress.bench.pool import run_pool
from shmstress.bench.sctbench.programs import ASSERT, BUGGY, TWINS, WAITS, Program, program
from shmstress.bench.sctbench.run import (
    PAPER_HEADLINE,
    SuiteOptions,
    SuiteReport,
    render_suite,
    report_json,
    run_suite,
)
from shmstress.cli.main import main
from shmstress.controlled.strategies import DporSpec, PctSpec, RandomWalkSpec, exploring_strategy
from shmstress.controlled.strategies.base import StrategySpec
from shmstress.core.errors import TrialError
from shmstress.core.signals import InterruptFlag
from shmstress.plain.outcome import PlainEnd, PlainOutcome
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.session import PlainSession
from shmstress.plain.spec import PlainSpec
from shmstress.repro.plain_bundle import from_json, from_outcome, to_json
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict

RANDOM_WALK = RandomWalkSpec()
PCT2 = PctSpec(depth=2)
PCT3 = PctSpec(depth=3)
DPOR = DporSpec(bound=-1)  # seedless: the same search in every session
Search = tuple[StrategySpec, int, int]  # strategy, seed, executions
DEFAULT_SEARCHES: tuple[Search, ...] = ((RANDOM_WALK, 0, 30), (PCT3, 0, 30))
SEARCHES: dict[str, tuple[Search, ...]] = {
    "account_bad": ((PCT3, 0, 30), (RANDOM_WALK, 0, 100)),
    "reorder_3_bad": ((DPOR, 0, 30), (PCT2, 0, 100)),
    "reorder_4_bad": ((DPOR, 0, 40), (PCT2, 1, 100)),
    "reorder_5_bad": ((DPOR, 0, 80), (PCT2, 0, 150)),
    "reorder_10_bad": ((PCT2, 10, 30), (PCT2, 0, 200)),
    "twostage_bad": ((PCT3, 0, 30), (RANDOM_WALK, 1, 60)),
}
"""The searches of each buggy program, tried in turn until one fails: the first is the
quick one found by scanning seeds (a seed takes the same steps in every session), the
next a wider net for when a change to the harness moves the steps a seed takes."""

DEADLOCKING = {"carter01_bad", "deadlock01_bad", "phase01_bad", "sync01_bad", "sync02_bad"}
TWIN_EXECUTIONS = 8


def test_the_suite_lists_every_program_of_the_brief_with_its_twins() -> None:
    names = {p.name for p in BUGGY}
    assert len(names) == len(BUGGY) == 26
    assert {f"din_phil{n}_sat" for n in range(2, 8)} <= names
    assert {f"reorder_{n}_bad" for n in (3, 4, 5, 10)} <= names
    assert {p.name for p in BUGGY if p.fails_as == WAITS} == DEADLOCKING
    twins = {twin for p in BUGGY for twin in p.twins}
    assert twins == {t.name for t in TWINS}
    for p in (*BUGGY, *TWINS):
        assert program(p.name) is p
        assert p.spec().max_processes >= p.threads  # a board slot for every process


@pytest.mark.parametrize("subject", BUGGY, ids=lambda p: p.name)
def test_every_buggy_program_fails_as_its_c_code_does(subject: Program) -> None:
    tried = []
    for strategy, seed, executions in SEARCHES.get(subject.name, DEFAULT_SEARCHES):
        result = explore(subject.spec(), Exploration(strategy, seed, executions))
        tried.append((strategy.describe(), seed, result.ends))
        if result.failing is not None:
            break

    failing = result.failing
    assert failing is not None and failing.failed, (subject.name, tried)
    assert failing.failure is not None
    end = failing.end.value
    assert subject.expected(end), (subject.name, failing.failure.message)
    if subject.name in DEADLOCKING:  # the bug is a wait nobody ends, never an exception
        assert failing.end in (PlainEnd.DEADLOCK, PlainEnd.NO_PROGRESS)
    if end in ASSERT:  # the program's own assert, not a bug of the port
        assert failing.failure.message.startswith("AssertionError: "), failing.failure.message
        assert subject.name.split("_")[0] in failing.failure.message, failing.failure.message


@pytest.mark.parametrize("twin", TWINS, ids=lambda p: p.name)
def test_every_twin_runs_clean(twin: Program) -> None:
    executions = TWIN_EXECUTIONS if twin.threads <= 4 else 3  # fsbench_ok: 26 workers
    result = explore(twin.spec(), Exploration(RANDOM_WALK, 0, executions))

    failing = result.failing
    if twin.fails_as:  # din_phil*_unsat: the circular wait of the C code, and nothing else
        assert twin.name.startswith("din_phil")
        assert failing is None or failing.end.value in WAITS, failing.failure
    else:
        assert failing is None, failing.failure
        assert result.executions == executions
        assert result.ends == {PlainEnd.FINISHED.value: executions}


def test_the_runner_prints_its_table_twins_totals_and_the_papers_headline() -> None:
    logged: list[str] = []
    options = SuiteOptions(executions=5, seeds=2, programs=("lazy01_bad", "sync01_bad"),
                           strategies=("default", "pct-d3", "random-walk", "exhaustive-b0",
                                       "free-noise"),
                           twin_executions=3)
    report = run_suite(options, logged.append)

    assert report.cut is None
    assert [p.program for p in report.programs] == ["lazy01_bad", "sync01_bad"]
    for figures in report.programs:
        assert [f.strategy for f in figures.strategies] == list(options.strategies)
        for f in figures.strategies:
            # exhaustive search does not depend on the seed: one trial
            assert len(f.trials) == (1 if f.strategy.startswith("exhaustive") else 2)
            assert all(1 <= t.executions <= 5 for t in f.trials)
            assert not f.unexpected
    sync01 = report.programs[1]
    assert all(f.all_found and f.median_executions == 1 for f in sync01.strategies)
    assert [(t.twin, t.strategy, t.clean) for t in sync01.twins] == [
        ("sync01_ok", "default", True), ("sync01_ok", "pct-d3", True),
        ("sync01_ok", "random-walk", True)]
    assert all(t.executions == 3 for t in sync01.twins)
    assert logged and all(line.startswith("sctbench: ") for line in logged)

    text = render_suite(report)
    check = report.default_check()
    assert check is not None  # the default against pct-d3, random walk and exhaustive-b0
    assert [key for key, _ in check.single_sums] == ["pct-d3", "random-walk", "exhaustive-b0"]
    assert [r[0] for r in check.ratios] == ["lazy01_bad", "sync01_bad"]
    verdict = "below" if check.below_every_single else "NOT below"
    assert (f"the default's sum of medians, {check.default_sum:,.0f} executions, "
            f"is {verdict}") in text
    assert "lazy01_bad" in text and "sync01_ok" in text
    assert PAPER_HEADLINE in text
    assert "3 of 3 twin runs clean" in text

    data = json.loads(json.dumps(report_json(report)))
    assert data["paper"]["pct_d3_found"] == 48
    assert data["default_check"]["below_every_single"] == check.below_every_single
    assert [t["strategy"] for t in data["totals"]] == list(options.strategies)
    assert data["programs"][1]["strategies"][0]["all_found"] is True


def test_a_signal_keeps_the_programs_measured_to_their_end() -> None:
    def log(line: str) -> None:
        if line.startswith("sctbench: sync01_bad"):
            raise KeyboardInterrupt

    options = SuiteOptions(executions=3, seeds=1, programs=("lazy01_bad", "sync01_bad"),
                           strategies=("random-walk",))
    report = run_suite(options, log)

    assert report.cut == "sync01_bad"
    assert [p.program for p in report.programs] == ["lazy01_bad"]
    assert "interrupted: program 'sync01_bad' was cut short" in render_suite(report)


def _figures(report: SuiteReport) -> list[object]:
    """Everything a report says but the wall times."""
    return [(p.program, [(f.strategy, [(t.seed, t.found, t.executions, t.end, t.exhausted)
                                       for t in f.trials]) for f in p.strategies],
             [(t.twin, t.strategy, t.executions, t.ends, t.end) for t in p.twins])
            for p in report.programs]


def test_parallel_trials_give_the_serial_figures() -> None:
    options = SuiteOptions(executions=5, seeds=2, programs=("stack_bad", "sync01_bad"),
                           strategies=("random-walk", "exhaustive-b0"), twin_executions=2,
                           twin_strategies=("pct-d3",))
    serial: list[str] = []
    parallel: list[str] = []
    one = run_suite(options, serial.append, jobs=1)
    two = run_suite(options, parallel.append, jobs=2)

    assert one.cut is None and two.cut is None
    assert _figures(two) == _figures(one)
    assert sorted(line.rsplit(",", 1)[0] for line in parallel) == sorted(
        line.rsplit(",", 1)[0] for line in serial)  # the same lines, wall times aside


def test_a_trial_that_raises_stops_the_pool_with_its_error() -> None:
    # divmod(task, log) raises TypeError in the pool's process, as a broken trial would
    with pytest.raises(TrialError, match="TypeError"):
        run_pool([1, 2, 3], divmod, 2, lambda line: None, InterruptFlag())


def test_a_cut_parallel_suite_keeps_whole_programs_only() -> None:
    def log(line: str) -> None:
        if line.startswith("sctbench: sync01_bad"):
            raise KeyboardInterrupt

    options = SuiteOptions(executions=3, seeds=2, programs=("lazy01_bad", "sync01_bad"),
                           strategies=("random-walk",))
    report = run_suite(options, log, jobs=2)

    assert report.cut in ("lazy01_bad", "sync01_bad")  # lazy01_bad may still be running
    assert [p.program for p in report.programs] == (
        [] if report.cut == "lazy01_bad" else ["lazy01_bad"])
    assert all(len(f.trials) == 2 for p in report.programs for f in p.strategies)


def test_the_cli_runs_the_suite_on_a_tiny_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = tmp_path / "sct.json"
    code = main(["bench", "--suite", "sctbench", "--program", "stack_bad", "--strategy",
                 "random-walk", "--strategy", "exhaustive-b1", "--executions", "20",
                 "--seeds", "1", "--twin-executions", "2", "--json", str(figures)])

    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "stack_bad" in captured.out and "stack_ok" in captured.out
    assert "PCT d=3 found 48 of its 49" in captured.out
    assert "sctbench: stack_bad random-walk seed 0: failed after" in captured.err
    data = json.loads(figures.read_text())
    assert data["programs"][0]["program"] == "stack_bad"
    assert data["options"]["executions"] == 20
    assert {t["twin"] for t in data["programs"][0]["twins"]} == {"stack_ok"}


def test_a_failure_a_program_should_not_show_comes_with_a_bundle_that_replays(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A twin that fails over a long run must say how to rerun that execution: here
    ``stack_bad``'s assert is made unexpected, as a twin's failure is."""
    monkeypatch.setattr(Program, "expected", lambda self, end: False)
    code = main(["bench", "--suite", "sctbench", "--program", "stack_bad", "--strategy",
                 "dpor", "--executions", "10", "--seeds", "1", "--twin-executions", "1",
                 "--twin-strategy", "dpor", "--jobs", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (line,) = [x for x in captured.out.splitlines() if "unexpected failure: stack_bad" in x]
    command = line.split("(replay: ")[1].rstrip(")")
    assert command.startswith("shmstress replay ")
    assert main(["replay", command.removeprefix("shmstress replay ")]) == 1  # reproduced


@pytest.mark.parametrize("extra", [
    ["--executions", "0"],
    ["--seeds", "0"],
    ["--twin-executions", "-1"],
    ["--jobs", "0"],
    ["--twin-strategy", "dfs"],
    ["--program", "nonsense_bad"],
    ["--strategy", "dfs"],
    ["--section", "plain"],
], ids=lambda extra: extra[0])
def test_the_cli_refuses_nonsense_in_one_line(
    extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bench", "--suite", "sctbench", *extra])

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1, captured.err
    assert extra[0] in captured.err


def test_the_same_seed_takes_the_same_steps_in_every_session(tmp_path: Path) -> None:
    """Three processes: ``Process.start`` polls the children already started, each poll a
    step. In a ``set``'s order (memory addresses) the same seed took other steps in another
    session and its bundle did not replay; the harness polls in start order."""
    steps = []
    for session in range(3):  # each a process of its own: other addresses every time
        out = tmp_path / str(session)
        done = subprocess.run(
            [sys.executable, "-m", "shmstress", "test",
             "shmstress.bench.sctbench.account:account_bad", "--strategy", "random_walk",
             "--seed", "0", "--executions", "300", "--quiet", "--out", str(out)],
            capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 1, done.stdout + done.stderr
        (bundle,) = out.glob("*.json")
        steps.append(json.loads(bundle.read_text())["steps"])
    assert steps[0] == steps[1] == steps[2]


STUCK_SEARCHES: dict[str, tuple[Search, ...]] = {
    # din_phil7_sat fails on its assert in most executions; its circular wait (all seven take
    # their first fork) needs the right preemptions: PCT d=4, seed 3, execution 6.
    "din_phil7_sat": ((PctSpec(depth=4), 3, 10),),
}


@pytest.mark.parametrize("name", [*sorted(DEADLOCKING), "din_phil7_sat"])
def test_the_deadlock_programs_end_stuck_with_bundles_that_replay(name: str) -> None:
    """A wait nobody ends is a failure: a deadlock or no progress, never a clean step bound,
    and its bundle replays to the same verdict, in the same words."""
    subject = program(name)
    spec = subject.spec()
    searches = STUCK_SEARCHES.get(name, SEARCHES.get(name, DEFAULT_SEARCHES))
    found: tuple[int, PlainOutcome] | None = None
    for strategy, seed, executions in searches:
        found = _first_stuck(spec, strategy, seed, executions)
        if found is not None:
            break
    assert found is not None, name
    index, failing = found
    assert failing.failure is not None

    bundle = from_json(json.loads(json.dumps(to_json(from_outcome(
        name, spec, strategy, seed, index, failing)))))
    report = replay_plain(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail
    assert report.outcome.end is failing.end
    assert report.outcome.failure is not None
    assert report.outcome.failure.message == failing.failure.message


def _first_stuck(spec: PlainSpec, strategy: StrategySpec, seed: int,
                 executions: int) -> tuple[int, PlainOutcome] | None:
    """The first execution of a search that ends stuck (past the asserts ``explore`` stops at)."""
    search = exploring_strategy(strategy, seed, spec.max_processes, spec.max_steps)
    with PlainSession(spec) as session:
        for index in range(executions):
            if not search.new_execution():
                return None
            outcome = session.execute(search, search.next_u64())
            if outcome.end in (PlainEnd.DEADLOCK, PlainEnd.NO_PROGRESS):
                return index, outcome
    return None
