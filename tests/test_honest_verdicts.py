"""Verdicts that claim no more than what ran (issue 33, item 4).

Each case once said more: DPOR cut by its budget of executions exited 0 with "ran every
execution (or the whole bounded search) to the end" and no coverage note, as a finished
search did; a scenario that started more processes than ``--max-processes`` was exit 1
with a bundle, so CI recorded a bug that was a limit; and Ctrl-C during ``shmstress
test`` printed "interrupted" and nothing of the executions that had run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil
import pytest

from shmstress.cli.main import main
from shmstress.controlled.strategies import Dpor, Exhaustive
from shmstress.controlled.strategies.base import Bounded
from shmstress.core.errors import PlainLimitError
from shmstress.core.exit_reason import ExitCode
from shmstress.testing.plain import check
from tests.test_dpor import Op, _random_programs, run_once

ROOT = Path(__file__).resolve().parent.parent
COUNTER = ROOT / "examples" / "plain" / "counter.py"
_SCRIPT = Path(sys.executable).with_name("shmstress")
SHMSTRESS = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "shmstress"]
TIMEOUT_S = 120.0


def _search(data: dict[str, object]) -> dict[str, object]:
    """The one bounded search a ``--json`` file's coverage lists."""
    coverage = data["coverage"]
    assert isinstance(coverage, dict)
    (search,) = coverage["searches"]
    assert isinstance(search, dict)
    return search


# ------------------------------------------------------------------ a search cut short


def _at_least_after_each_execution(strategy: Bounded,
                                   programs: Sequence[Sequence[Op]]) -> list[int]:
    """The whole search, on the simulated scheduler: after each execution k, the "at least"
    a cut there would print (k + untried)."""
    said: list[int] = []
    while strategy.new_execution():
        run_once(strategy, programs)
        said.append(len(said) + 1 + strategy.untried())
    assert strategy.finished and strategy.untried() == 0
    return said


@pytest.mark.parametrize("make", [lambda: Dpor(1), lambda: Dpor(1, bound=1),
                                  lambda: Exhaustive(1, bound=1)],
                         ids=["dpor", "dpor-bound-1", "exhaustive-bound-1"])
def test_at_least_never_passes_what_the_whole_search_runs(make: Callable[[], Bounded]) -> None:
    """"N of at least M" is a lower bound: M is never more than the executions the finished
    search ran, and more than N wherever another execution followed."""
    for seed in range(12):
        programs = _random_programs(seed)
        said = _at_least_after_each_execution(make(), programs)
        total = len(said)
        assert all(at_least <= total for at_least in said), (seed, said)
        assert all(at_least > k for k, at_least in enumerate(said[:-1], 1)), (seed, said)


def test_dpor_on_a_tracker_cut_by_its_budget_says_of_at_least_and_never_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "run.json"
    args = ["run", "--mode", "controlled", "--strategy", "dpor", "--variant", "fixed",
            "--executions", "3", "--out", str(tmp_path / "out")]
    assert main([*args, "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "whole" not in out and "complete" not in out
    assert "exit reason: executions-done (ran every execution of its budget" in out
    at_least = int(re.search(r"the dpor search was not finished: 3 of at least ([\d,]+) "
                             r"schedules ran", out)[1].replace(",", ""))  # type: ignore[index]
    assert at_least > 3
    search = _search(json.loads(report.read_text()))
    assert search == {"strategy": "dpor", "finished": False, "schedules_run": 3,
                      "schedules_at_least": at_least}
    assert main([*args, "--require-coverage"]) == ExitCode.THIN_COVERAGE


def test_dpor_on_plain_code_cut_by_its_budget_says_of_at_least(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "test.json"
    args = ["test", f"{COUNTER}:locked", "--strategy", "dpor", "--executions", "2",
            "--out", str(tmp_path / "out")]
    assert main([*args, "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "whole" not in out and "complete" not in out and "search finished" not in out
    assert "thin coverage: the dpor search was not finished: 2 of at least " in out
    data = json.loads(report.read_text())
    search = _search(data)
    assert search["finished"] is False and search["schedules_run"] == 2
    assert isinstance(search["schedules_at_least"], int) and search["schedules_at_least"] > 2
    assert data["complete"] is False
    assert main([*args, "--require-coverage"]) == ExitCode.THIN_COVERAGE


def test_dpor_that_finishes_on_a_tiny_scenario_says_it_finished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "test.json"
    assert main(["test", f"{COUNTER}:locked", "--strategy", "dpor", "--require-coverage",
                 "--out", str(tmp_path / "out"), "--json", str(report)]) == 0
    out = capsys.readouterr().out
    data = json.loads(report.read_text())
    ran = data["executions"]
    assert f"the dpor search finished: it ran all {ran} schedules it had to try" in out
    assert "thin coverage" not in out
    assert _search(data) == {"strategy": "dpor", "finished": True, "schedules_run": ran,
                             "schedules_at_least": ran}
    assert data["complete"] is True


# ------------------------------------------------------------------------- a limit hit


def test_more_processes_than_max_processes_is_the_limit_code_not_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir, report = tmp_path / "out", tmp_path / "test.json"
    code = main(["test", f"{COUNTER}:locked", "--max-processes", "1", "--out", str(out_dir),
                 "--json", str(report)])
    captured = capsys.readouterr()
    assert code == ExitCode.LIMIT  # not 1: no bug was found
    (line,) = captured.err.strip().splitlines()
    assert line == ("shmstress: limit: the scenario started more than 1 process, the most "
                    "--max-processes allows (max_processes= of concurrency_test): raise it")
    assert "limit hit in execution 1, not a bug of the scenario" in captured.out
    assert "bundle" not in captured.out.replace("no bundle", "")
    assert not out_dir.exists() or not any(out_dir.iterdir())  # no bundle, no log
    data = json.loads(report.read_text())
    assert data["exit_code"] == ExitCode.LIMIT and data["failure"] is None
    assert "--max-processes" in data["limit"]


def test_a_concurrency_test_over_its_limit_errors_with_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHMSTRESS_OUT", str(tmp_path))
    spec = importlib.util.spec_from_file_location("verdicts_counter", COUNTER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    with pytest.raises(PlainLimitError, match="--max-processes"):
        check(module.locked, executions=5, max_processes=1)
    assert not any(tmp_path.iterdir())


# -------------------------------------------------------------------------- interrupted

MARKED = """
import multiprocessing as mp
import os


def increment(counter):
    with counter.get_lock():
        counter.value += 1


def scenario():
    with open(os.environ["MARKS"], "a") as marks:  # one line per execution started
        marks.write("execution\\n")
    counter = mp.Value("i", 0)
    workers = [mp.Process(target=increment, args=(counter,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.value == 2
"""


def test_sigint_during_shmstress_test_prints_the_executions_run(
    tmp_path: Path, private_shm: tuple[dict[str, str], Path]
) -> None:
    env, private = private_shm
    scenario, marks, report = tmp_path / "marked.py", tmp_path / "marks", tmp_path / "t.json"
    scenario.write_text(MARKED)
    command = subprocess.Popen(
        [*SHMSTRESS, "test", f"{scenario}:scenario", "--executions", "100000", "--seed", "1",
         "--out", str(tmp_path / "out"), "--json", str(report)],
        env={**env, "MARKS": str(marks)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not marks.exists() or len(marks.read_text().splitlines()) < 4:
            assert command.poll() is None and time.monotonic() < deadline, command.stderr
            time.sleep(0.05)
        family = psutil.Process(command.pid).children(recursive=True)
        command.send_signal(signal.SIGINT)
        out, err = command.communicate(timeout=TIMEOUT_S)
    finally:
        if command.poll() is None:
            command.kill()
            command.communicate()
    assert command.returncode == ExitCode.INTERRUPTED, out + err
    assert "Traceback" not in err
    data = json.loads(report.read_text())
    ran = data["executions"]
    assert ran >= 3 and data["interrupted"] is True and data["exit_code"] == 130
    assert f"interrupted (Ctrl-C or SIGTERM) after {ran:,} executions" in out
    assert f"  executions: {ran:,} ({ran:,} finished)" in out and "covered:" in out
    assert err.strip().splitlines() == [f"shmstress: interrupted after {ran:,} executions"]
    _, alive = psutil.wait_procs(family, timeout=10)
    assert not alive
    assert not list(private.iterdir()), os.listdir(private)
