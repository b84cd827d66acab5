"""``pytest --stress-report DIR`` over ``@concurrency_test`` tests: every run is a trial in
DIR/results.jsonl, as a stress run is, with the failing one's bundle kept under DIR, and
``shmstress report`` shows both (with and without pytest-xdist)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from shmstress.reports.results import parse_trial

pytest_plugins = ["pytester"]

SCRIPT = Path(sys.executable).with_name("shmstress")
TIMEOUT_S = 600  # the machine may be busy with other runs: a hang fails, slowness does not

# The racy counter of examples/plain/counter.py, and its locked fix. The message holds
# markup, which the report must show as text.
USER_TESTS = '''
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
    assert counter.value == 2, f"<b>counter is {counter.value}</b>"


@concurrency_test(executions=50)
def test_racy():
    _run(increment)


@concurrency_test(executions=50)
def test_locked():
    _run(increment_locked)
'''


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _shmstress(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False, cwd=cwd)


def _recorded_and_reported(pytester: pytest.Pytester, *options: str) -> None:
    pytester.makepyfile(test_counter_user=USER_TESTS)
    report = pytester.path / "nightly"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", *options, "--stress-report", str(report),
        "test_counter_user.py", timeout=TIMEOUT_S)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert f"2 stress runs recorded in {report / 'results.jsonl'}, 1 repro bundle" in out

    records = _records(report / "results.jsonl")
    by_test = {str(r["test"]): r for r in records}
    assert len(records) == 2 and set(by_test) == {  # each once, xdist or not
        "test_counter_user.py::test_racy", "test_counter_user.py::test_locked"}
    assert len({r["campaign"] for r in records}) == 1
    racy, locked = by_test["test_counter_user.py::test_racy"], by_test[
        "test_counter_user.py::test_locked"]
    assert racy["scenario"] == "test_counter_user.py:test_racy"
    assert (racy["tracker"], racy["variant"]) == ("test_counter_user.py", "test_racy")
    assert racy["outcome"] == "violation"
    assert racy["violation"]["invariant"] == "AssertionError"  # type: ignore[index]
    assert "lost update of counter.value" in str(racy["explanation"])
    assert racy["rerun_command"] == "pytest test_counter_user.py::test_racy"
    bundle = str(racy["bundle"])
    assert Path(bundle).parts[0] == "bundles" and (report / bundle).is_file()
    # run from the results' directory, as every record's: the test file is outside it
    assert racy["replay_command"] == f"shmstress replay {bundle} --code ../test_counter_user.py"
    assert (report / str(racy["swimlane"])).is_file()
    assert f"bundle: {(report / bundle).resolve()}" in out  # the failure names it
    assert locked["scenario"] == "test_counter_user.py:test_locked"
    assert locked["outcome"] == "clean" and locked["bundle"] is None
    assert {r["config"]["executions"] for r in records} == {50}  # type: ignore[index]
    for line, record in enumerate(records, 1):  # records the reports read as trials
        assert parse_trial(record, report / "results.jsonl", line).scenario == record["scenario"]

    replayed = _shmstress("replay", str(report / bundle), cwd=pytester.path)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "reproduced" in replayed.stdout
    recorded = _shmstress(*shlex.split(str(racy["replay_command"]))[1:], cwd=report)
    assert recorded.returncode == 1, recorded.stdout + recorded.stderr

    rendered = _shmstress("report", str(report / "results.jsonl"), "-o",
                          str(pytester.path / "page"), cwd=pytester.path)
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    page = (pytester.path / "page" / "index.html").read_text(encoding="utf-8")
    assert "test_counter_user.py:test_racy controlled/portfolio" in page
    assert "test_counter_user.py:test_locked controlled/portfolio" in page
    assert "(scenario test_counter_user.py:test_racy)" in page
    assert "lost update of counter.value" in page
    assert f"shmstress replay {bundle}" in page
    assert f'<img src="{racy["swimlane"]}"' in page
    assert "&lt;b&gt;counter is 1&lt;/b&gt;" in page and "<b>counter is" not in page
    assert (pytester.path / "page" / bundle).is_file()  # the page's copy replays too


def test_stress_report_records_each_concurrency_test_and_the_report_shows_them(
        pytester: pytest.Pytester) -> None:
    _recorded_and_reported(pytester)


def test_under_xdist_each_concurrency_test_reaches_the_controller_once(
        pytester: pytest.Pytester) -> None:
    _recorded_and_reported(pytester, "-n", "2")


def test_results_with_and_without_a_scenario_load(tmp_path: Path) -> None:
    tracker = {"schema": 2, "campaign": "c", "tracker": "dra", "variant": "v",
               "config": {"workers": {"b": 1}, "noise": 0.1, "strategy": "free"},
               "config_key": "dra/v b1 free p=0.1", "outcome": "clean"}
    assert parse_trial(tracker, tmp_path / "results.jsonl", 1).scenario is None
    scenario = {**tracker, "tracker": "t.py", "variant": "racy", "scenario": "t.py:racy",
                "config_key": "t.py:racy controlled/pct"}
    assert parse_trial(scenario, tmp_path / "results.jsonl", 2).scenario == "t.py:racy"
