"""The rough edges a new user hits in the first hour (issue 30, item 4), one test each."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shmstress.analysis.plain_story import plain_story
from shmstress.analysis.swimlane import LaneGap, plain_swimlane
from shmstress.cli.main import build_parser
from shmstress.controlled.coverage import Coverage
from shmstress.controlled.strategies import (
    DECLARED_MIX,
    DEFAULT_MIX,
    PLAIN_MIX,
    PctSpec,
    RandomWalkSpec,
    mix_words,
)
from shmstress.core.plurals import rate
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from shmstress.render.plain_report import interleaving_lines, result_json, result_lines
from shmstress.render.swimlane import render_text

pytest_plugins = ["pytester"]

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "plain"
SCRIPT = Path(sys.executable).with_name("shmstress")
"""The installed command, not ``python -m shmstress``: ``-m`` puts the current directory on
``sys.path`` by itself, which would hide what the script does."""


def _shmstress(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=300,
                          check=False, cwd=cwd)


def test_a_module_in_the_current_directory_is_a_scenario(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "counter.py", tmp_path / "bank.py")
    done = _shmstress("test", "bank:racy", "--seed", "2", "--out", str(tmp_path / "out"),
                      cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "lost update of counter.value" in done.stdout
    (bundle,) = (tmp_path / "out").glob("*.json")
    replayed = _shmstress("replay", str(bundle), cwd=tmp_path)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "reproduced: AssertionError" in replayed.stdout


def _summary_field(out: str, label: str) -> str:
    (line,) = [line for line in out.splitlines() if line.strip().startswith(f"{label}:")]
    return line.split(":", 1)[1].strip()


def test_test_json_holds_the_printed_summary_as_plain_numbers(tmp_path: Path) -> None:
    racy = _shmstress("test", f"{EXAMPLES / 'counter.py'}:racy", "--seed", "2", "--out",
                      str(tmp_path), "--json", str(tmp_path / "racy.json"), cwd=tmp_path)
    assert racy.returncode == 1, racy.stdout + racy.stderr
    data = json.loads((tmp_path / "racy.json").read_text())
    executions = int(_summary_field(racy.stdout, "executions").split()[0])
    assert data["executions"] == executions and data["exit_code"] == 1
    printed = _summary_field(racy.stdout, "failure in execution " +
                             str(data["failure"]["execution"]))
    assert printed == data["failure"]["message"]
    assert data["failure"]["bundle"] == _summary_field(racy.stdout, "bundle")
    assert data["failure"]["replay"] == _summary_field(racy.stdout, "replay it")
    clean = _shmstress("test", f"{EXAMPLES / 'counter.py'}:locked", "--executions", "30",
                       "--strategy", "random_walk", "--seed", "3",
                       "--json", str(tmp_path / "clean.json"), cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    data = json.loads((tmp_path / "clean.json").read_text())
    assert data["executions"] == 30 and data["failure"] is None
    assert data["coverage"]["executions"] == 30 and data["exit_code"] == 0
    assert data["steps"] == int(_summary_field(clean.stdout, "controlled").split()[0]
                                .replace(",", ""))


def test_test_json_is_refused_before_the_run_where_no_file_can_be(tmp_path: Path) -> None:
    done = _shmstress("test", f"{EXAMPLES / 'counter.py'}:racy", "--json", str(tmp_path),
                      cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "the --json file" in done.stderr and not done.stdout


def _clean_result(executions: int, steps: int, elapsed_s: float) -> PlainResult:
    spec = PlainSpec(ScenarioRef(str(EXAMPLES / "counter.py"), "locked"), trace=("/x",))
    return PlainResult(spec, Exploration(RandomWalkSpec(), 7, executions),
                       executions, {"finished": executions}, steps, elapsed_s, False,
                       coverage=Coverage(executions), kinds={"read": steps})


def test_machine_readable_counts_are_plain_integers_and_the_text_stays_readable() -> None:
    result = _clean_result(12_345, 1_234_567, 10.0)
    text = json.dumps(result_json(result, "counter.py:locked", None, None, 0))
    assert '"executions": 12345' in text and '"steps": 1234567' in text
    assert not re.search(r"\d,\d{3}", text), text
    assert "executions: 12,345" in "\n".join(result_lines(result, "counter.py:locked", None))


def test_a_slow_search_has_a_rate_not_zero_executions_per_second() -> None:
    slow = "\n".join(result_lines(_clean_result(3, 30, 12.5), "counter.py:locked", None))
    assert "(0.240 executions/s)" in slow, slow
    fast = "\n".join(result_lines(_clean_result(2000, 30, 0.5), "counter.py:locked", None))
    assert "(4,000 executions/s)" in fast, fast
    assert [rate(value, "points") for value in (12_478.4, 31.42, 8.04, 0.0123, 0.0)] == [
        "12,478 points/s", "31.4 points/s", "8.04 points/s", "0.0123 points/s", "0 points/s"]


def test_a_seedless_search_prints_no_seed_and_takes_the_same_one_every_time(
        tmp_path: Path) -> None:
    runs = [_shmstress("test", f"{EXAMPLES / 'counter.py'}:racy", "--strategy", "dpor",
                       "--out", str(tmp_path), "--json", str(tmp_path / f"{n}.json"),
                       cwd=tmp_path) for n in (1, 2)]
    for done in runs:
        assert done.returncode == 1, done.stdout + done.stderr
        header = done.stdout.splitlines()[0]
        assert "dpor" in header and "seed" not in header, header
    assert json.loads((tmp_path / "1.json").read_text())["seed"] is None
    bundles = sorted(b for b in tmp_path.glob("*.json") if b.stem not in ("1", "2"))
    assert len(bundles) == 2
    assert len({json.loads(b.read_text())["seed"] for b in bundles}) == 1  # not drawn
    replayed = _shmstress("replay", str(bundles[0]), "--code", str(EXAMPLES), cwd=tmp_path)
    assert "reproduced" in replayed.stdout and "seed" not in replayed.stdout.splitlines()[1]
    seeded = _shmstress("test", f"{EXAMPLES / 'counter.py'}:racy", "--strategy", "random_walk",
                        "--seed", "5", "--out", str(tmp_path), cwd=tmp_path)
    assert "seed 5" in seeded.stdout.splitlines()[0]


def test_a_seedless_tracker_search_prints_no_seed_and_draws_none(tmp_path: Path) -> None:
    """``run --mode controlled --strategy dpor`` as ``test --strategy dpor``: the search is the
    same whatever the seed, so none is drawn (it seeds only the workers' own draws: 0)."""
    for n in (1, 2):
        done = _shmstress("run", "--variant", "fixed", "--mode", "controlled", "--strategy",
                          "dpor", "--executions", "3", "--out", str(tmp_path),
                          "--json", str(tmp_path / f"{n}.json"), cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        header = done.stdout.splitlines()[0]
        assert "dpor" in header and "seed" not in header, header
        assert json.loads((tmp_path / f"{n}.json").read_text())["run"]["config"]["seed"] == 0
    seeded = _shmstress("run", "--variant", "fixed", "--mode", "controlled", "--strategy",
                        "pct", "--executions", "3", "--out", str(tmp_path), cwd=tmp_path)
    assert ", seed " in seeded.stdout.splitlines()[0]  # drawn, and printed to rerun it


def test_show_and_the_interleaving_never_skip_a_step_number_without_a_fold_row() -> None:
    spec = PlainSpec(ScenarioRef(str(EXAMPLES / "counter.py"), "racy"))
    result = explore(spec, Exploration(PctSpec(), 1, 20))
    failing = result.failing
    assert failing is not None
    story = plain_story(failing)
    lane = plain_swimlane(failing, story, "t")
    covered = [seq for row in lane.rows for seq in (
        range(row.first_seq, row.last_seq + 1) if isinstance(row, LaneGap) else (row.seq,))]
    assert covered == list(range(story.shown[-1] + 1)), render_text(lane)
    assert all(row.count == row.last_seq - row.first_seq + 1
               for row in lane.rows if isinstance(row, LaneGap))
    numbered = 0
    for line in interleaving_lines(failing, story):
        if "... " in line:
            numbered += int(line.split("... ")[1].split()[0])
        else:
            numbered += 1  # a step's number: the steps before it, plus one
            assert int(line.split()[0]) == numbered, line


DECORATED = '''
import multiprocessing as mp

from shmstress.testing.plain import concurrency_test


def increment(counter):
    counter.value += 1


@concurrency_test(executions=100)
def test_racy():
    counter = mp.Value("i", 0)
    workers = [mp.Process(target=increment, args=(counter,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.value == 2, counter.value
'''


def test_a_failing_pytest_test_gives_both_replays_with_an_absolute_bundle_path(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_plain_user=DECORATED)
    monkeypatch.setenv("SHMSTRESS_OUT", "relative-out")  # relative to where pytest runs
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    lines = [line.strip() for line in result.stdout.lines]
    shell = next(line for line in lines if line.startswith("replay it: shmstress replay "))
    bundle = Path(shell.rsplit(" ", 1)[1])
    assert bundle.is_absolute() and bundle.is_file(), shell
    assert bundle.parent == pytester.path.resolve() / "relative-out"
    assert f"bundle: {bundle}" in lines
    assert f"or in pytest: pytest --stress-replay {bundle}" in lines
    elsewhere = pytester.mkdir("elsewhere")
    replayed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--stress-replay",
         str(bundle), "--rootdir", str(pytester.path)], cwd=elsewhere, capture_output=True,
        text=True, timeout=300, check=False)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "reproduced: AssertionError" in replayed.stdout


OLD_API_TRACKER = '''
from harness import Tracker


class Old(Tracker):
    pass
'''


def test_a_tracker_written_against_the_old_api_is_told_of_shmstress_api(
        tmp_path: Path) -> None:
    (tmp_path / "old_tracker.py").write_text(OLD_API_TRACKER)
    done = _shmstress("run", "--tracker", "old_tracker.py:Old", "--duration", "0.2",
                      "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "'harness'" in done.stderr and "shmstress.api" in done.stderr


def _help(command: str) -> str:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return " ".join(sub.choices[command].format_help().split())


def test_the_strategy_help_says_what_the_portfolio_runs() -> None:
    test_help, run_help = _help("test"), _help("run")
    assert f"default portfolio: {mix_words(PLAIN_MIX)})" in test_help
    assert "random walk and dpor take turns" in test_help  # what runs first on plain code
    assert mix_words(DECLARED_MIX) in run_help and mix_words(DEFAULT_MIX) in run_help
    for mix in (PLAIN_MIX, DEFAULT_MIX, DECLARED_MIX):
        for member in mix.members:
            assert member.short() in mix_words(mix)
    assert "default: exhaustive 2, dpor none" in test_help
    assert "(default none; -1: none)" in run_help
    assert "dpor and free mode" in _help("bench")
