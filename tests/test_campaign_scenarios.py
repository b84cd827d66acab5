"""``shmstress campaign FILE:function ...``: plain-code scenarios as a campaign's grid, each
trial explored with its own seed and recorded as ``pytest --stress-report`` records a
``@concurrency_test`` (issue 29, item 4); the report shows them, resume and shards work."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import html5lib
import pytest

from shmstress.campaign.grid import GridSpec, every_trial, expand
from shmstress.campaign.scenarios import named_scenarios, session_options
from shmstress.cli.main import main
from shmstress.core.errors import ScenarioError
from shmstress.core.shard import Shard
from shmstress.plain.scenario import ScenarioRef
from shmstress.reports.results import parse_trial

SHMSTRESS = [sys.executable, "-m", "shmstress"]
COUNTER = (Path(__file__).resolve().parents[1] / "examples" / "plain" / "counter.py")
TRACKER = Path(__file__).resolve().parents[1] / "examples" / "counter_tracker.py"
RACY, LOCKED = f"{COUNTER}:racy", f"{COUNTER}:locked"
SMALL = ["--trials", "2", "--executions", "50", "--seed", "1", "--strategy", "pct,free",
         "--noise", "0.1", "--quiet"]


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _text(element: object) -> str:
    return "".join(element.itertext()).strip()  # type: ignore[attr-defined]


def _assert_reproduces_from(command: str, folder: Path) -> None:
    """``command``, a ``shmstress replay`` naming its scenario with ``--code``, run from
    ``folder``, reproduces its failure (exit 1)."""
    words = shlex.split(command)
    assert words[:2] == ["shmstress", "replay"] and "--code" in words
    replayed = subprocess.run([*SHMSTRESS, *words[1:]], cwd=folder, capture_output=True,
                              text=True, timeout=300, check=False)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "reproduced" in replayed.stdout


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scenarios") / "night"
    assert main(["campaign", RACY, LOCKED, "--out", str(out), *SMALL]) == 0
    return out


def test_a_recorded_replay_command_reproduces_from_the_campaign_directory(
    campaign: Path,
) -> None:
    """Every record's replay command runs from its results' directory; a bundle imports
    code only from the directory it is replayed in unless ``--code`` names it, and the
    scenario's file is outside the campaign's: the command names it (it was refused, "no
    file of this project", as a helper found)."""
    racy = next(r for r in _records(campaign / "results.jsonl")
                if r["outcome"] == "violation" and r["config"]["mode"] == "controlled")  # type: ignore[index]
    _assert_reproduces_from(str(racy["replay_command"]), campaign)


def test_the_report_shows_the_racy_failure_with_its_swimlane_and_the_locked_one_clean(
    campaign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = _records(campaign / "results.jsonl")
    assert len(records) == 8  # 2 scenarios x (pct, free p=0.1) x 2 trials
    assert len({r["seed"] for r in records}) == 8  # each trial its own seed
    by_scenario: dict[object, list[dict[str, object]]] = {}
    for line, record in enumerate(records, 1):
        by_scenario.setdefault(record["scenario"], []).append(record)
        assert parse_trial(record, campaign / "results.jsonl", line).scenario == record[
            "scenario"]
        assert record["config"]["executions"] == 50  # type: ignore[index]
    # controlled trials are their seeds' searches; a free one's schedule is the OS's, so
    # its racy trials are not held to finding the race in 50 executions
    assert {r["outcome"] for r in by_scenario[RACY]
            if r["config"]["mode"] == "controlled"} == {"violation"}  # type: ignore[index]
    assert {r["outcome"] for r in by_scenario[LOCKED]} == {"clean"}
    for racy in (r for r in by_scenario[RACY] if r["outcome"] == "violation"):
        assert (campaign / str(racy["bundle"])).is_file()
        assert (campaign / str(racy["swimlane"])).is_file()
        drive = ("--strategy pct" if racy["config"]["mode"] == "controlled"  # type: ignore[index]
                 else "--mode free --noise 0.1")
        assert racy["rerun_command"] == (f"shmstress test {RACY} {drive} --seed "
                                         f"{racy['seed']} --executions 50")
    assert {r["config_key"] for r in records} == {
        f"{s} {d}" for s in (RACY, LOCKED) for d in ("controlled/pct", "free p=0.1")}

    page = tmp_path / "page"
    assert main(["report", str(campaign / "results.jsonl"), "-o", str(page)]) == 0
    capsys.readouterr()
    tree = html5lib.parse((page / "index.html").read_bytes(), treebuilder="etree",
                          namespaceHTMLElements=False)
    rows = {}
    for row in tree.iter("tr"):
        cells = [_text(cell) for cell in row.iter("td")]
        if cells and cells[0].startswith(str(COUNTER)):
            rows[cells[0]] = (cells[1], cells[2], row.get("class"))
    assert rows[f"{RACY} controlled/pct"] == ("2", "2", "failing")
    assert rows[f"{RACY} free p=0.1"][0] == "2"
    for drive in ("controlled/pct", "free p=0.1"):
        assert rows[f"{LOCKED} {drive}"] == ("2", "0", None)
    (failure,) = [s for s in tree.iter("section") if s.get("class") == "failure"]
    assert "racy: AssertionError" in _text(failure.find("h3"))
    assert f"scenario {RACY}" in _text(failure)
    assert "lost update of counter.value" in _text(failure)
    (picture,) = [img.get("src") for img in failure.iter("img")]
    assert picture.endswith(".svg") and (page / picture).is_file()
    # the page's replay command works from the page's directory: it names the scenario's
    # file, which is outside the report (without it: "no file of this project")
    replay = next(_text(code) for code in failure.iter("code")
                  if _text(code).startswith("shmstress replay "))
    _assert_reproduces_from(replay, page)


def test_resume_after_a_partial_run_runs_only_the_missing_trials(
    campaign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = _records(campaign / "results.jsonl")
    out = tmp_path / "cut"
    out.mkdir()
    (out / "campaign.json").write_bytes((campaign / "campaign.json").read_bytes())
    kept = (campaign / "results.jsonl").read_text(encoding="utf-8").splitlines()[:1]
    (out / "results.jsonl").write_text(kept[0] + "\n", encoding="utf-8")
    assert main(["campaign", "--out", str(out), "--resume", "--quiet"]) == 0
    said = capsys.readouterr().out
    assert "8/8 trials" in said and "1 trial was already recorded" in said
    resumed = _records(out / "results.jsonl")
    assert resumed[0] == whole[0]  # the recorded trial was not run again
    assert [(r["config_key"], r["trial"], r["seed"]) for r in resumed] == [
        (r["config_key"], r["trial"], r["seed"]) for r in whole]
    def controlled(records: list[dict[str, object]]) -> list[object]:
        """Outcomes of the controlled trials: the same seed, the same search."""
        return [r["outcome"] for r in records
                if r["config"]["mode"] == "controlled"]  # type: ignore[index]

    assert controlled(resumed) == controlled(whole) and "violation" in controlled(resumed)


@pytest.mark.parametrize(("source", "named"), [
    (COUNTER, ["counter.py:locked"]),
    (TRACKER, ["--tracker", "counter.py:TicketTracker", "--variant", "locked"]),
], ids=["scenario", "tracker"])
def test_a_campaign_named_by_relative_paths_resumes_from_another_directory(
    source: Path, named: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    """Its files are found where they were named (``GridSpec.origin``), its names and keys
    stay as typed: the resumed trials are the same ones. A tracker's file was looked for in
    the directory of the resume ('tracker file counter.py does not exist')."""
    project, elsewhere, out = (tmp_path / "project", tmp_path / "elsewhere", tmp_path / "out")
    project.mkdir()
    elsewhere.mkdir()
    (project / "counter.py").write_bytes(source.read_bytes())
    monkeypatch.chdir(project)
    assert main(["campaign", *named, "--out", str(out), "--strategy", "pct",
                 "--trials", "2", "--executions", "5", "--seed", "1", "--quiet"]) == 0
    whole = _records(out / "results.jsonl")
    (out / "results.jsonl").write_text(
        (out / "results.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n",
        encoding="utf-8")
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["campaign", "--out", str(out), "--resume", "--quiet"]) == 0, \
        capsys.readouterr().err
    resumed = _records(out / "results.jsonl")
    name = "tracker" if "--tracker" in named else "scenario"
    assert [(r[name], r["config_key"], r["trial"], r["seed"], r["outcome"])
            for r in resumed] == [
        (r[name], r["config_key"], r["trial"], r["seed"], r["outcome"]) for r in whole]
    typed = "counter.py:TicketTracker" if name == "tracker" else "counter.py:locked"
    assert len(resumed) == 2 and resumed[1][name] == typed


def test_shards_of_a_scenario_grid_cover_its_trials_once_with_the_same_seeds() -> None:
    spec = GridSpec(campaign="c", seed=7, scenarios=(RACY, LOCKED), strategies=("pct", "free"),
                    trials=3)
    whole = [(t.config_key, t.trial, t.seed, t.scenario) for t in every_trial(spec)]
    sharded = [(t.config_key, t.trial, t.seed, t.scenario)
               for index in (1, 2, 3)
               for t in expand(GridSpec.from_json(
                   replace(spec, shard=Shard(index, 3)).to_json()))]
    assert sharded == whole and len(whole) == 2 * 3 * 3
    assert {t[3] for t in whole} == {RACY, LOCKED}


def test_a_grid_saved_before_scenarios_loads_as_a_tracker_grid() -> None:
    saved = json.loads(GridSpec(campaign="c", seed=1).to_json())
    del saved["scenarios"]
    loaded = GridSpec.from_json(json.dumps(saved))
    assert loaded.scenarios == () and every_trial(loaded) == every_trial(
        GridSpec(campaign="c", seed=1))


def test_a_directory_means_every_concurrency_test_under_it(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "test_a.py").write_text(
        "from shmstress.testing import plain\n"
        "from shmstress.testing.plain import concurrency_test\n\n"
        "@concurrency_test(executions=5)\ndef test_one():\n    pass\n\n"
        "@plain.concurrency_test()\ndef test_two():\n    pass\n\n"
        "def test_plain():\n    pass\n", encoding="utf-8")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "test_b.py").write_text(
        "@concurrency_test()\ndef test_hidden():\n    pass\n", encoding="utf-8")
    found = named_scenarios([str(tmp_path)])
    where = (tmp_path / "pkg" / "test_a.py").as_posix()
    assert found == (f"{where}:test_one", f"{where}:test_two")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ScenarioError, match="holds no @concurrency_test"):
        named_scenarios([str(empty)])


MANY = """\
import multiprocessing as mp

from shmstress.testing import concurrency_test

PROCESSES = 18


def _nothing():
    pass


def _start_many():
    workers = [mp.Process(target=_nothing) for _ in range(PROCESSES)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


@concurrency_test(executions=3, max_processes=20, trace=["json"])
def test_many():
    _start_many()


@concurrency_test(executions=3)
def test_many_at_the_default_limit():
    _start_many()
"""


def test_a_trial_runs_with_its_decorators_session_arguments(tmp_path: Path) -> None:
    """``max_processes`` (and the rest of ``SESSION_OPTIONS``) are read from the file's
    syntax: the trial that says it may start 18 processes runs clean, where the same
    scenario at the default limit is a limit, as pytest would have it."""
    (tmp_path / "test_many.py").write_text(MANY, encoding="utf-8")
    where = (tmp_path / "test_many.py").as_posix()
    options = session_options(ScenarioRef.parse(f"{where}:test_many"))
    assert options.max_processes == 20 and options.trace == ("json",)
    assert options.spec(ScenarioRef.parse(f"{where}:test_many"), None).max_processes == 21
    out = tmp_path / "out"
    main(["campaign", str(tmp_path), "--out", str(out), "--trials", "1", "--executions", "3",
          "--strategy", "pct", "--quiet"])
    ends = {str(r["scenario"]).rsplit(":", 1)[1]: (r["outcome"], r["exit_reason"])
            for r in _records(out / "results.jsonl")}
    assert ends["test_many"] == ("clean", "executions-done"), ends
    assert ends["test_many_at_the_default_limit"] == ("error", "limit"), ends


@pytest.mark.parametrize(("argument", "said"), [
    ("trace=TRACED", "trace= of @concurrency_test test_x is not a literal"),
    ("max_steps='many'", "max_steps='many' of @concurrency_test test_x is not int"),
    ("accept_uncontrolled=1", "accept_uncontrolled=1 of @concurrency_test test_x is not bool"),
])
def test_a_decorator_argument_a_campaign_cannot_read_is_one_line(
    tmp_path: Path, argument: str, said: str
) -> None:
    (tmp_path / "test_x.py").write_text(
        f"TRACED = ('json',)\n\n@concurrency_test({argument})\ndef test_x():\n    pass\n",
        encoding="utf-8")
    with pytest.raises(ScenarioError, match=re.escape(said)):
        named_scenarios([str(tmp_path)])


@pytest.mark.parametrize(("words", "said"), [
    ([f"{COUNTER}:nosuch"], "defines no 'nosuch' at module level"),
    (["no/such/file.py:racy"], "does not exist"),
    ([RACY, "--variant", "fixed"], "--variant applies to a tracker's trials"),
    ([RACY, "--tracker", "dra", "--workers", "binder=2"], "--tracker, --workers apply"),
    ([RACY, "--duration", "3"], "--duration applies"),
    ([RACY, "--tx", "popen"], "--tx spreads a tracker's trials"),
    ([RACY, "--strategy", "pct", "--noise", "0.2"], "--noise would apply to no trial"),
    ([RACY, "--expect-clean", "fixed"], "--expect-clean names no scenario's function: fixed"),
])
def test_bad_scenario_input_is_one_line_exit_2(
    words: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["campaign", *words, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err
    assert not (out / "results.jsonl").exists() and not (out / "campaign.json").exists()


def test_resume_refuses_scenarios_on_its_command_line(
    campaign: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["campaign", RACY, "--out", str(campaign), "--resume"]) == 2
    assert "drop FILE:function" in capsys.readouterr().err
