"""The swimlane of a failure: one lane per worker, the racing steps those the explanation
tells, a text table whose columns line up, an SVG that parses, ``shmstress show`` and the
campaign report's picture."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from shmstress.analysis.failure import FailureAnalysis, analyse
from shmstress.analysis.swimlane import LaneGap, Swimlane, swimlane
from shmstress.campaign.grid import GridSpec
from shmstress.campaign.runner import run_campaign
from shmstress.cli.main import main
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import PctSpec
from shmstress.core.config import RunConfig
from shmstress.core.result import RunResult
from shmstress.core.trace import step_number
from shmstress.plugin.wording import wording_by_name
from shmstress.render.swimlane import render_svg, render_text
from shmstress.reports import group_failures, load_results_file
from shmstress.reports.report import build_report
from shmstress.reports.swimlanes import svg_problem
from shmstress.repro.bundle import from_controlled, write_bundle
from shmstress.repro.replay import Verdict, replay_bundle
from tests.test_reports import _violation, _write_jsonl

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def failure(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunResult, FailureAnalysis]:
    """A real failing bundle (PCT on the revision race, fixed seed), replayed and analysed."""
    spec = PctSpec(depth=3, spin="demote")
    found = run_controlled(RunConfig(tracker="dra", variant="gather-unchecked", seed=0),
                           ControlledOptions(spec, executions=2000))
    bundle = from_controlled(found)
    assert bundle is not None
    path = write_bundle(bundle, tmp_path_factory.mktemp("swimlane") / "race.json")
    report = replay_bundle(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail
    result = report.result
    analysis = analyse(result, wording_by_name("dra", result.config.params))
    assert analysis is not None
    return path, result, analysis


def _lane(failure: tuple[Path, RunResult, FailureAnalysis], keep_all: bool = False) -> Swimlane:
    _, result, analysis = failure
    assert result.recording is not None
    return swimlane(analysis, result.recording.steps, result.workers, "the race", keep_all)


def test_one_lane_per_worker_named_by_role(
    failure: tuple[Path, RunResult, FailureAnalysis],
) -> None:
    lane = _lane(failure)
    _, result, _ = failure
    assert [x.worker for x in lane.lanes] == [w.worker_id for w in result.workers]
    assert [x.name for x in lane.lanes] == ["binder #1", "binder #2", "informer #1",
                                            "gatherer #1"]
    assert all(step.worker in range(len(lane.lanes)) for step in lane.steps)


def test_racing_steps_are_the_explanations_and_the_violation_ends_it(
    failure: tuple[Path, RunResult, FailureAnalysis],
) -> None:
    _, _, analysis = failure
    lane = _lane(failure)
    racing = [step for step in lane.steps if step.racing]
    assert racing, "the explanation tells some steps"
    assert {(s.worker, s.seq) for s in racing} == {(s.worker, s.seq) for s in analysis.story}
    named = {run.worker_id for run in analysis.explanation.runs}
    assert {s.worker for s in racing} == named
    assert len(named) >= 2, "a race takes two"
    assert lane.steps[-1].violation and lane.steps[-1].seq == analysis.focus.end
    assert analysis.violation.invariant in lane.violation
    assert analysis.explanation.outcome in lane.violation


def test_folding_keeps_every_racing_step_and_counts_the_rest(
    failure: tuple[Path, RunResult, FailureAnalysis],
) -> None:
    folded, whole = _lane(failure), _lane(failure, keep_all=True)
    assert not any(isinstance(row, LaneGap) for row in whole.rows)
    assert [s for s in folded.steps if s.racing] == [s for s in whole.steps if s.racing]
    gaps = [row for row in folded.rows if isinstance(row, LaneGap)]
    assert len(folded.steps) + sum(g.count for g in gaps) == len(whole.steps)
    seqs = [s.seq for s in whole.steps]
    assert seqs == list(range(seqs[0], seqs[-1] + 1)), "every step of the window, in order"


def _separators(line: str) -> list[int]:
    return [m.start() for m in re.finditer(r" \| ", line)]


def test_the_text_tables_columns_line_up(
    failure: tuple[Path, RunResult, FailureAnalysis],
) -> None:
    lane = _lane(failure)
    text = render_text(lane, width=140)
    lines = text.splitlines()
    header = lines[1]
    columns = _separators(header)
    assert len(columns) == len(lane.lanes)
    names = [cell.strip() for cell in header.split(" | ")[1:]]
    assert names == [x.name for x in lane.lanes]
    body = lines[3:3 + len(lane.rows)]
    assert all(len(line) <= 140 for line in lines[:3 + len(lane.rows)])
    for row, line in zip(lane.rows, body, strict=True):
        if isinstance(row, LaneGap):
            assert "folded" in line
            continue
        found = _separators(line)
        assert found == columns[:len(found)], line
        cells = line.split(" | ")
        assert cells[0].strip() == f"{step_number(row.seq):,}"
        filled = [i for i, cell in enumerate(cells[1:]) if cell.strip()]
        assert filled == [row.worker], line  # the step sits in its worker's column
        mark = "!" if row.violation else "*" if row.racing else " "
        assert cells[1 + row.worker].startswith(mark + " ")
    assert lane.violation.split("\n")[0] in text


def test_the_svg_parses_and_names_every_worker_and_the_violation(
    failure: tuple[Path, RunResult, FailureAnalysis],
) -> None:
    lane = _lane(failure)
    root = ET.fromstring(render_svg(lane))
    assert root.tag == f"{SVG}svg"
    texts = " ".join("".join(e.itertext()) for e in root.iter(f"{SVG}text"))
    for name in (x.name for x in lane.lanes):
        assert name in texts
    assert lane.violation.split(":")[0] in texts  # the invariant, in the box at the bottom
    titles = [e.text or "" for e in root.iter(f"{SVG}title")]
    for step in lane.steps:  # a cut label keeps its whole text in a tooltip
        assert any(step.detail in title for title in titles)
    assert svg_problem(render_svg(lane).encode()) is None  # the report publishes it


def test_hostile_text_is_escaped_in_the_svg(
    failure: tuple[Path, RunResult, FailureAnalysis],
) -> None:
    lane = _lane(failure)
    hostile = replace(lane, title='<script>alert("x")</script> & co',
                      violation="a < b && c > d")
    text = render_svg(hostile)
    root = ET.fromstring(text)
    assert not any(e.tag.endswith("script") for e in root.iter())
    assert svg_problem(text.encode()) is None


def test_show_prints_the_table_and_writes_the_svg(
    failure: tuple[Path, RunResult, FailureAnalysis], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, _, _ = failure
    svg = tmp_path / "out" / "race.svg"
    assert main(["show", str(path), "--svg", str(svg), "--width", "160"]) == 0
    out = capsys.readouterr().out
    for name in ("binder #1", "binder #2", "informer #1", "gatherer #1"):
        assert name in out
    assert "=> gather-complete:" in out
    assert ET.parse(svg).getroot().tag == f"{SVG}svg"
    assert not list(svg.parent.glob(".*.tmp"))


def test_show_of_a_file_that_is_not_a_bundle_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    junk = tmp_path / "notes.json"
    junk.write_text('{"hello": 1}\n')
    assert main(["show", str(junk)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not a shmstress repro bundle" in err


def test_show_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["show", "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "shmstress show BUNDLE --svg" in out


def test_the_campaign_report_shows_the_swimlane_of_a_failure(tmp_path: Path) -> None:
    spec = GridSpec(campaign="2026-11-24T08:00:00Z-swim", seed=7, variants=("gather-unchecked",),
                    workers=({"binder": 2},), strategies=("pct",), trials=1)
    results = run_campaign(spec, tmp_path / "c", progress_enabled=False).results
    (trial,) = load_results_file(results).trials
    assert trial.outcome == "violation"
    assert trial.swimlane is not None and trial.swimlane_file is not None
    assert trial.swimlane_file.is_file() and trial.swimlane.endswith(".svg")
    assert Path(trial.swimlane).with_suffix(".json") == Path(str(trial.bundle))
    summary = build_report([results], tmp_path / "report")
    page = summary.index_html.read_text(encoding="utf-8")
    (failure_group,) = group_failures(load_results_file(results).trials)
    assert "<svg" not in page  # shown as an image: a picture runs no script
    assert page.count(f'<img src="{trial.swimlane}"') == 1
    copied = summary.index_html.parent / trial.swimlane  # copied beside the page
    root = ET.parse(copied).getroot()
    texts = " ".join("".join(e.itertext()) for e in root.iter(f"{SVG}text"))
    for name in ("binder #1", "binder #2", "informer #1", "gatherer #1"):
        assert name in texts
    assert failure_group.invariant in texts
    assert "http://" not in page


def test_show_draws_a_plain_code_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """A ``shmstress test`` bundle: one lane per process, the lost update's steps marked."""
    counter = Path(__file__).parent.parent / "examples" / "plain" / "counter.py"
    assert main(["test", f"{counter}:racy", "--seed", "2", "--out", str(tmp_path)]) == 1
    (bundle,) = tmp_path.glob("*.json")
    capsys.readouterr()
    svg = tmp_path / "plain.svg"
    assert main(["show", str(bundle), "--svg", str(svg), "--width", "120"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[1]
    assert [cell.strip() for cell in header.split(" | ")[1:]] == [
        "main", "increment #1", "increment #2"]
    assert "* write counter.value = 1" in out
    assert "=> failed: AssertionError" in out
    root = ET.parse(svg).getroot()
    assert "increment #2" in " ".join("".join(e.itertext()) for e in root.iter(f"{SVG}text"))


@pytest.mark.parametrize("hostile", [
    '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
    '<svg xmlns="http://www.w3.org/2000/svg"><rect onclick="alert(1)"/></svg>',
    "<html><body>not a picture</body></html>",
    "<svg",
])
def test_the_report_publishes_no_active_or_broken_svg(tmp_path: Path, hostile: str) -> None:
    """The report reads whatever file a results record names: only an SVG as the engine
    draws it is copied and shown, anything else is left out with the reason, and the page
    stays script-free."""
    (tmp_path / "bundles").mkdir()
    (tmp_path / "bundles" / "x.json").write_text("{}")
    (tmp_path / "bundles" / "x.svg").write_text(hostile)
    record = _violation("boom", bundle="bundles/x.json", swimlane="bundles/x.svg")
    results = _write_jsonl(tmp_path / "results.jsonl", [record])
    page = build_report([results], tmp_path / "report").index_html.read_text(encoding="utf-8")
    assert "<script" not in page and 'onclick="' not in page and "<svg" not in page
    assert "swimlane is not shown" in page
    # Not copied: opened by itself, an SVG is a document that runs its scripts.
    assert not (tmp_path / "report" / "bundles" / "x.svg").exists()
    assert "x.svg" not in page.split("<h4>Who did what when</h4>")[1].split("<h4>")[0]
