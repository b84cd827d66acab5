"""``shmstress bench --markdown FILE``: the figures of the run as the page the docs include.

The page must hold what the run printed (one rendering of the figures, never a second
that drifts), name the command that measures it again, and be written whole or not at all.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from shmstress.bench.suite import BenchReport
from shmstress.cli import bench as cli_bench
from shmstress.cli.main import main


def _fenced_lines(page: str) -> list[str]:
    """The lines of the page's ```text blocks: the figures as printed."""
    lines: list[str] = []
    inside = False
    for line in page.splitlines():
        if line.startswith("```"):
            inside = not inside and line == "```text"
            continue
        if inside:
            lines.append(line)
    return lines


def test_the_page_holds_the_printed_figures_and_the_command_that_measures_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page_path, data_path = tmp_path / "figures.md", tmp_path / "bench.json"
    code = main(["bench", "--section", "free", "--free-seconds", "0.2",
                 "--markdown", str(page_path), "--json", str(data_path)])

    captured = capsys.readouterr()
    assert code == 0, captured.err
    page = page_path.read_text(encoding="utf-8")
    assert page.startswith("# Figures\n")
    assert "## Free mode throughput" in page
    printed = [line for line in captured.out.splitlines() if line.strip()]
    assert printed and _fenced_lines(page) == printed
    command = page.split("Measured by `", 1)[1].split("`", 1)[0]
    assert shlex.split(command) == [
        "shmstress", "bench", "--free-seconds", "0.2", "--section", "free",
        "--json", str(data_path), "--markdown", str(page_path)]
    data = json.loads(data_path.read_text())  # the same run's data, in the same figures
    assert f"{data['free_points_per_s']:,.0f} points/s" in page
    assert "usable CPUs, load average" in page


def test_a_suite_writes_its_table_as_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page_path = tmp_path / "sctbench.md"
    code = main(["bench", "--suite", "sctbench", "--program", "stack_bad", "--strategy",
                 "random-walk", "--executions", "5", "--seeds", "1", "--twin-executions", "1",
                 "--jobs", "1", "--markdown", str(page_path)])

    captured = capsys.readouterr()
    assert code == 0, captured.err
    page = page_path.read_text(encoding="utf-8")
    assert "## SCTBench ports" in page
    assert _fenced_lines(page) == captured.out.rstrip("\n").splitlines()
    assert "--suite sctbench --executions 5 --seeds 1" in page


def test_a_page_that_cannot_be_written_is_one_line_and_nothing_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bench", "--section", "free", "--free-seconds", "0.2",
                 "--markdown", str(tmp_path)])  # a directory

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and "--markdown" in captured.err


def test_a_full_disk_leaves_the_json_and_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What is written is under test here, not the measuring: the run is a canned one."""
    canned = BenchReport(free_points_per_s=1000.0, free_points=3000,
                         unrecorded_points_per_s=1250.0, free_policy="uniform",
                         completed=["free"])
    monkeypatch.setattr(cli_bench, "run_bench", lambda options, log: canned)
    data_path = tmp_path / "bench.json"
    code = main(["bench", "--section", "free", "--markdown", "/dev/full",
                 "--json", str(data_path)])

    captured = capsys.readouterr()
    assert code == 2  # a clean run whose output could not be written
    assert json.loads(data_path.read_text())["completed"] == ["free"]
    (line,) = captured.err.strip().splitlines()[-1:]
    assert line.startswith("shmstress: error: cannot write the figures page /dev/full")
