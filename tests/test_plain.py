"""Plain multiprocessing code under controlled scheduling: found, explained, replayed exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shmstress.analysis.plain_story import plain_story
from shmstress.controlled.strategies import PctSpec, RandomWalkSpec, exploring_strategy, spec_named
from shmstress.core.errors import ScenarioError
from shmstress.plain.outcome import PlainEnd
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.session import PlainSession
from shmstress.plain.spec import PlainSpec
from shmstress.render.plain_report import result_lines
from shmstress.repro.plain_bundle import from_json, from_outcome, to_json
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "plain"
PRIMITIVES = Path(__file__).resolve().parent / "scenarios" / "primitives.py"


def spec(where: Path, function: str, **limits: float) -> PlainSpec:
    return PlainSpec(ScenarioRef.parse(f"{where}:{function}"), **limits)  # type: ignore[arg-type]


def search(where: Path, function: str, executions: int, seed: int = 1,
           strategy: str = "pct", **limits: float):  # type: ignore[no-untyped-def]
    return explore(spec(where, function, **limits),
                   Exploration(spec_named(strategy), seed, executions))


@pytest.mark.parametrize("seed", range(3))
def test_the_lost_update_on_a_value_is_found_within_20_executions(seed: int) -> None:
    result = search(EXAMPLES / "counter.py", "racy", 20, seed=seed)
    assert result.failing is not None, result.ends
    failure = result.failing.failure
    assert failure is not None and failure.end is PlainEnd.FAILED
    assert failure.message.startswith("AssertionError: 2 increments, counter is 1")
    assert result.failing.who(failure.worker) == "main"


def test_the_lost_update_is_explained_as_a_short_interleaving() -> None:
    result = search(EXAMPLES / "counter.py", "racy", 20)
    failing = result.failing
    assert failing is not None
    story = plain_story(failing)
    (update,) = story.lost_updates
    steps = failing.steps
    read, other, write = steps[update.read_step], steps[update.other_step], steps[update.write_step]
    assert update.what == "counter.value"
    assert (read.label, other.label, write.label) == (
        "read counter.value", "write counter.value", "write counter.value")
    assert read.value == 0 and other.value == 1 and write.value == 1  # both read 0; one lost
    assert update.worker != update.other
    assert {failing.who(update.worker), failing.who(update.other)} == {
        "increment #1", "increment #2"}
    assert len(story.shown) <= 12
    text = "\n".join(result_lines(result, "counter.py:racy", None))
    assert "lost update of counter.value" in text
    assert "write is lost" in text
    assert "counter.py:17" in text  # the line of the increment
    assert "shmstress/plain" not in text  # the traceback shows the user's frames only


def test_the_lost_update_replays_exactly_20_times_of_20() -> None:
    the_spec = spec(EXAMPLES / "counter.py", "racy")
    exploration = Exploration(PctSpec(), 3, 20)
    result = explore(the_spec, exploration)
    assert result.failing is not None
    bundle = from_json(json.loads(json.dumps(to_json(from_outcome(
        "counter.py:racy", the_spec, exploration.strategy, 3, result.failing_index,
        result.failing)))))
    for _ in range(20):
        report = replay_plain(bundle)
        assert report.verdict is Verdict.REPRODUCED, report.detail
        assert report.outcome.steps == result.failing.steps  # the same values read and written


def test_the_same_seed_gives_the_same_trace() -> None:
    first = search(EXAMPLES / "counter.py", "racy", 50, seed=11, strategy="random_walk")
    second = search(EXAMPLES / "counter.py", "racy", 50, seed=11, strategy="random_walk")
    assert first.failing is not None and second.failing is not None
    assert first.failing_index == second.failing_index
    assert first.failing.steps == second.failing.steps


def test_random_draws_in_processes_replay() -> None:
    the_spec = spec(PRIMITIVES, "random_draws")
    result = explore(the_spec, Exploration(RandomWalkSpec(), 5, 1))
    assert result.failing is not None and result.failing.failure is not None
    bundle = from_outcome("primitives.py:random_draws", the_spec, RandomWalkSpec(),
                          5, 0, result.failing)
    assert replay_plain(bundle).detail.startswith(result.failing.failure.message)


def test_an_abba_deadlock_names_both_locks_and_holders_and_replays() -> None:
    the_spec = spec(EXAMPLES / "transfer.py", "opposite_order")
    result = explore(the_spec, Exploration(PctSpec(), 1, 100))
    failing = result.failing
    assert failing is not None and failing.failure is not None
    failure = failing.failure
    assert failure.end is PlainEnd.DEADLOCK
    assert failure.message.startswith("deadlock: ")
    for name in ("alice_lock", "bob_lock", "transfer #1", "transfer #2"):
        assert name in failure.message
    holders = {w.worker: w.held for w in failure.waiting}
    assert sorted(held for held in holders.values() if held) == [("alice_lock",), ("bob_lock",)]
    bundle = from_outcome("transfer.py:opposite_order", the_spec, PctSpec(), 1,
                          result.failing_index, failing)
    report = replay_plain(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail


def test_a_lost_notify_is_no_progress_naming_the_condition() -> None:
    result = search(EXAMPLES / "handoff.py", "lost_notify", 100)
    failing = result.failing
    assert failing is not None and failing.failure is not None
    assert failing.failure.end is PlainEnd.NO_PROGRESS
    assert "waits on cv for a notify" in failing.failure.message
    (lost,) = plain_story(failing).lost_notifies
    assert lost.condition == "cv"
    assert failing.who(lost.notifier).startswith("producer")
    assert lost.notify_step < lost.wait_step


@pytest.mark.parametrize(("where", "function"), [
    (EXAMPLES / "transfer.py", "same_order"),
    (EXAMPLES / "handoff.py", "checked"),
])
def test_correct_twins_stay_clean(where: Path, function: str) -> None:
    for strategy in ("pct", "random_walk"):
        result = search(where, function, 100, strategy=strategy)
        assert result.failing is None, result.failing and result.failing.failure
        assert result.ends == {"finished": 100}


@pytest.mark.stress
@pytest.mark.nightly
def test_the_locked_counter_runs_10000_executions_clean(tmp_path: Path) -> None:
    """Through the command, in a process of its own: forking each execution from the
    small ``shmstress`` process, not from this test session's big one, halves the time."""
    done = subprocess.run(
        [sys.executable, "-m", "shmstress", "test", f"{EXAMPLES / 'counter.py'}:locked",
         "--executions", "10000", "--seed", "1", "--quiet", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "executions: 10,000 (10,000 finished)" in done.stdout, done.stdout
    assert "failures: none" in done.stdout
    assert not list(tmp_path.iterdir())  # no bundle: nothing failed


@pytest.mark.parametrize("function", [
    "module_state", "semaphore_bounds_concurrency", "event_orders_a_handoff",
    "barrier_lets_all_pass_together", "rlock_is_reentrant_and_exclusive",
    "timed_acquire_gives_up", "spinning_with_sleep_yields", "worker_exit_code_is_not_a_failure",
    "barrier_breaks_on_timeout", "contexts_and_locked_loops",
])
def test_instrumented_primitives_keep_their_guarantees(function: str) -> None:
    for strategy in ("pct", "random_walk"):
        result = search(PRIMITIVES, function, 40, strategy=strategy, max_steps=2000)
        assert result.failing is None, result.failing and result.failing.failure
        assert set(result.ends) == {"finished"}, result.ends


def test_an_exception_in_a_worker_is_the_failure_with_its_traceback() -> None:
    result = search(PRIMITIVES, "worker_raises", 5)
    failing = result.failing
    assert failing is not None and failing.failure is not None
    assert failing.failure.message == "KeyError: 'missing'"
    assert failing.who(failing.failure.worker) == "_fail #1"
    assert "primitives.py" in failing.failure.details


def test_code_that_blocks_outside_control_is_reported_hung() -> None:
    result = search(PRIMITIVES, "blocks_outside_control", 3, stop_timeout=1.0)
    failing = result.failing
    assert failing is not None and failing.end is PlainEnd.HUNG
    assert failing.failure is not None and "_block_forever #1" in failing.failure.message
    assert int(result.exit_code) == 4


@pytest.mark.parametrize(("text", "problem"), [
    ("nothing", "a scenario is FILE.py:FUNCTION or MODULE:FUNCTION"),
    ("missing.py:f", "does not exist"),
])
def test_a_bad_scenario_name_is_one_line(text: str, problem: str) -> None:
    with pytest.raises(ScenarioError, match=problem):
        ScenarioRef.parse(text)


def test_a_scenario_module_that_fails_to_import_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import multiprocessing\nraise RuntimeError('no')\n")
    with pytest.raises(ScenarioError, match=r"importing .*broken.py failed: RuntimeError: no"):
        search(broken, "f", 1)
    with pytest.raises(ScenarioError, match="defines no 'absent'"):
        search(EXAMPLES / "counter.py", "absent", 1)


def _shmstress(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shmstress", *args], capture_output=True,
                          text=True, timeout=300, check=False, cwd=cwd)


def test_the_cli_finds_writes_a_bundle_and_prints_the_replay_command(tmp_path: Path) -> None:
    done = _shmstress("test", str(EXAMPLES / "counter.py") + ":racy", "--seed", "2",
                      "--out", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "lost update of counter.value" in done.stdout
    (bundle,) = tmp_path.glob("*.json")
    assert f"replay it: shmstress replay {bundle}" in done.stdout
    assert bundle.with_suffix(".log").read_text().count("read counter.value") >= 2
    # the scenario is not under the working directory: the user says it may run
    replayed = _shmstress("replay", str(bundle), "--code", str(EXAMPLES / "counter.py"),
                          cwd=tmp_path)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "reproduced: AssertionError: 2 increments, counter is 1" in replayed.stdout
    assert "lost update of counter.value" in replayed.stdout
    clean = _shmstress("test", str(EXAMPLES / "counter.py") + ":locked", "--executions", "50",
                       cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "failures: none" in clean.stdout
    bad = _shmstress("test", "nowhere.py:f", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr


def test_the_failing_execution_is_logged_in_klog_lines() -> None:
    from shmstress.render.klog import parse_line
    from shmstress.render.plain_log import log_lines

    result = search(EXAMPLES / "counter.py", "racy", 20)
    failing = result.failing
    assert failing is not None
    parsed = [parse_line(line) for line in log_lines(failing)]
    reads = [p for p in parsed if p.message == "read counter.value" and p.logger != "main"]
    assert [p.fields["value"] for p in reads] == [0, 0]  # both increments read 0
    assert {p.pid for p in reads} == {failing.pids[s.worker] for s in failing.steps
                                      if s.label == "read counter.value" and s.worker != 0}
    assert all(p.file == "counter.py" for p in reads)
    last = parsed[-1]
    assert last.level == "E" and last.logger == "main"
    assert last.message.startswith("raised: AssertionError: 2 increments")
    starts = [p.message for p in parsed if p.message.startswith("start ")]
    assert starts == ["start increment #1", "start increment #2"]


DECORATED = '''
import multiprocessing as mp

from shmstress.testing.plain import concurrency_test


def increment(counter):
    counter.value += 1


def increment_locked(counter):
    with counter.get_lock():
        counter.value += 1


def _run(target):
    counter = mp.Value("i", 0)
    workers = [mp.Process(target=target, args=(counter,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.value == 2, counter.value


@concurrency_test(executions=100)
def test_racy():
    _run(increment)


@concurrency_test(executions=50, strategy="random_walk")
def test_locked():
    _run(increment_locked)
'''


def test_the_pytest_decorator_fails_with_the_interleaving_and_the_replay_command(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain_user=DECORATED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "ConcurrencyFailure" in out
    assert "lost update of counter.value" in out
    assert "replay it: shmstress replay " in out
    assert "harness/shmstress" not in out.split("ConcurrencyFailure", 1)[1]


def _schedules(the_spec: PlainSpec, fresh_host: bool, executions: int) -> list[object]:
    strategy = exploring_strategy(RandomWalkSpec(), 0, the_spec.max_processes,
                                  the_spec.max_steps, "plain")
    runs: list[object] = []
    with PlainSession(the_spec, fresh_host=fresh_host) as session:
        for _ in range(executions):
            assert strategy.new_execution()
            outcome = session.execute(strategy, strategy.next_u64())
            runs.append((outcome.end, outcome.processes, outcome.steps,
                         outcome.failure and outcome.failure.message))
    return runs


def test_a_fresh_host_runs_the_schedules_a_forked_one_runs() -> None:
    """A long search starts its host as a new interpreter (no numpy, none of the
    coordinator's modules: cheaper forks); the executions must not notice."""
    the_spec = spec(EXAMPLES / "counter.py", "racy")
    forked = _schedules(the_spec, False, 6)
    assert _schedules(the_spec, True, 6) == forked
    assert len({run[0] for run in forked}) == 2  # some fail, some finish: both compared


def test_the_execution_processes_do_not_carry_what_the_coordinator_imported() -> None:
    import numpy  # noqa: F401 - the coordinator has it; a forked host would have it too

    the_spec = spec(Path(__file__).resolve().parent / "scenarios" / "lean.py",
                    "processes_without_numpy")
    runs = _schedules(the_spec, True, 2)
    assert [run[0] for run in runs] == [PlainEnd.FINISHED] * 2, runs
