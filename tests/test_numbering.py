"""One numbering of executions: what a file or ``--json`` stores is the number printed.

A command prints the failing execution from 1 ("failure in execution 4", "first failure:
execution 4", a bundle named ``-e4``); the bundles (format version 2), ``test --json`` and
``run --json`` store that same number, and a bundle of version 1 (which stored it from 0)
still loads and replays under the number its run printed.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shmstress.cli.main import main
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import PctSpec
from shmstress.core.config import RunConfig
from shmstress.testing.explore import failure_message
from shmstress.testing.plain import ConcurrencyFailure, check

pytestmark = pytest.mark.stress

ROOT = Path(__file__).resolve().parents[1]
COUNTER = ROOT / "examples" / "plain" / "counter.py"
LOCK_ORDER = f"{Path(__file__).parent / 'trackers' / 'lock_order.py'}:LockOrder"
# PCT from seed 6 deadlocks the lock-order inversion in its fourth execution: a number
# that is neither 0 nor 1, so an index stored for a number cannot pass for it.
TRACKER_RUN = ["--tracker", LOCK_ORDER, "--variant", "inverted", "--mode", "controlled",
               "--strategy", "pct", "--executions", "200", "--seed", "6", "--quiet"]


def _printed(pattern: str, text: str) -> int:
    (found,) = re.findall(pattern, text)
    return int(found)


def _as_version_1(bundle: Path, target: Path) -> Path:
    """``bundle`` as the previous release wrote it: format version 1, execution from 0."""
    data = json.loads(bundle.read_text())
    data.update(format_version=1, execution=data["execution"] - 1)
    target.write_text(json.dumps(data, indent=1))
    return target


def test_a_plain_failure_has_one_execution_number_in_print_json_and_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, summary = tmp_path / "out", tmp_path / "summary.json"
    assert main(["test", f"{COUNTER}:racy", "--seed", "2", "--quiet", "--out", str(out),
                 "--json", str(summary)]) == 1
    text = capsys.readouterr().out
    number = _printed(r"failure in execution (\d+):", text)
    assert json.loads(summary.read_text())["failure"]["execution"] == number
    (bundle,) = out.glob("*.json")
    data = json.loads(bundle.read_text())
    assert (data["format_version"], data["execution"]) == (2, number)
    assert bundle.name.endswith(f"-e{number}.json")
    if data["strategy"].get("member"):  # the portfolio names its member's execution too
        assert data["strategy"]["member"].endswith(f" at execution {number}")

    _replays_under(number, bundle, "reproduced: AssertionError", tmp_path, capsys)


def _replays_under(number: int, bundle: Path, verdict: str, tmp_path: Path,
                   capsys: pytest.CaptureFixture[str]) -> None:
    """The bundle, and the same bundle rewritten as version 1, replay under ``number``."""
    assert main(["replay", str(bundle)]) == 1
    assert _printed(r"in execution (\d+) of seed", capsys.readouterr().out) == number
    old = _as_version_1(bundle, tmp_path / "old.json")
    assert main(["replay", str(old)]) == 1
    replayed = capsys.readouterr().out
    assert verdict in replayed
    assert _printed(r"in execution (\d+) of seed", replayed) == number


def test_a_controlled_tracker_failure_has_one_execution_number_in_print_json_and_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, result = tmp_path / "out", tmp_path / "result.json"
    assert main(["run", *TRACKER_RUN, "--out", str(out), "--json", str(result)]) == 1
    text = capsys.readouterr().out
    number = _printed(r"first failure: execution (\d+) after", text)
    assert json.loads(result.read_text())["failing_execution"] == number
    (bundle,) = out.glob("*.json")
    data = json.loads(bundle.read_text())
    assert (data["format_version"], data["execution"]) == (2, number)
    assert f"-e{number}-" in bundle.name

    _replays_under(number, bundle, "reproduced: deadlock", tmp_path, capsys)


def test_a_failing_interleaving_test_names_the_execution_its_bundle_stores(
    tmp_path: Path
) -> None:
    result = run_controlled(RunConfig(tracker=LOCK_ORDER, variant="inverted", seed=6),
                            ControlledOptions(PctSpec(), executions=200))
    message = failure_message(result, tmp_path)
    number = _printed(r"in execution (\d+) \(seed", message)
    (bundle,) = tmp_path.glob("*.json")
    assert json.loads(bundle.read_text())["execution"] == number


def test_a_failing_concurrency_test_names_the_execution_its_bundle_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHMSTRESS_OUT", str(tmp_path))
    with pytest.raises(ConcurrencyFailure) as failed:
        check(_example(monkeypatch, "racy"), seed=2)
    message = str(failed.value)
    number = _printed(r"failure in execution (\d+):", message)
    (path,) = re.findall(r"^  bundle: (.+)$", message, re.MULTILINE)
    assert json.loads(Path(path).read_text())["execution"] == number


def _example(monkeypatch: pytest.MonkeyPatch, function: str) -> Callable[..., Any]:
    """A function of the counter example, imported as a test module is (``check`` finds the
    scenario by its module's file)."""
    spec = importlib.util.spec_from_file_location("numbering_counter", COUNTER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    found: Callable[..., Any] = getattr(module, function)
    return found


# --- one numbering of steps: the first step is step 1, as every view prints it -------------

PUBLISHED_RUN = ["--tracker", f"{Path(__file__).parent / 'trackers' / 'published.py'}:Published",
                 "--variant", "flag-first", "--mode", "controlled", "--strategy", "random_walk",
                 "--executions", "200", "--seed", "1", "--quiet"]


def _plain_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, Path]:
    """What ``shmstress test`` of the racy counter prints (seed 5: a story that leaves out
    the first steps, so a table numbered from 0 cannot pass for one numbered from 1), and
    its bundle."""
    out = tmp_path / "out"
    assert main(["test", f"{COUNTER}:racy", "--seed", "5", "--quiet", "--out", str(out)]) == 1
    (bundle,) = out.glob("*.json")
    return capsys.readouterr().out, bundle


def _section(text: str, first: str, end: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if first in line)
    stop = next(i for i in range(start + 1, len(lines)) if end in lines[i])
    return lines[start + 1:stop]


def _walk(rows: list[str], row: str, gap: str) -> dict[int, str]:
    """Each numbered row of a step table by its number, checking that every number is the
    count of steps before it plus one: a gap row says how many it leaves out, and no number
    is skipped without one."""
    taken, numbered = 0, {}
    for line in rows:
        left_out = re.search(gap, line)
        if left_out:
            taken += int(left_out[1].replace(",", ""))
            continue
        found = re.match(row, line)
        assert found, line
        taken += 1
        assert int(found[1].replace(",", "")) == taken, (line, rows)
        numbered[taken] = found[2]
    return numbered


def _interleaving(text: str) -> tuple[int, dict[int, str]]:
    """The step count the interleaving's heading gives, and its rows by number."""
    total = _printed(r"the interleaving \((\d+) steps", text)
    rows = _section(text, "the interleaving (", "what went wrong:")
    return total, _walk(rows, r"^\s+(\d+)  (.+)$", r"^\s+\.\.\. (\d+) more steps?$")


def _show_table(text: str) -> dict[int, str]:
    """``show``'s swimlane rows by their step number (the text after the step column)."""
    rows = _section(text, "-----+", "=> ")[:-1]
    return _walk(rows, r"^\s*([\d,]+) \| (.*)$", r"^\s*: \| \.\.\. ([\d,]+) steps? folded")


def _the_step(bundle: Path, number: int) -> tuple[str, str]:
    """(who took it, its label) of step ``number`` of the bundle's schedule."""
    data = json.loads(bundle.read_text())
    worker, label = data["steps"][number - 1]
    names = data.get("processes")
    return (names[worker] if names else str(worker)), data["labels"][label]


def test_the_printed_interleaving_numbers_its_steps_from_1_to_the_step_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, bundle = _plain_failure(tmp_path, capsys)
    total, rows = _interleaving(text)
    assert min(rows) > 1  # the story leaves out the first steps: the gap row counts them
    assert max(rows) == total == len(json.loads(bundle.read_text())["steps"])
    assert _printed(r"raised, after step (\d+):", text) == total  # the failure came last


def test_the_race_starts_at_a_step_the_table_shows_under_the_same_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, bundle = _plain_failure(tmp_path, capsys)
    (number, who, what) = re.findall(r"the race starts at step (\d+): (\w+ #\d+) (.+)$", text,
                                     re.MULTILINE)[0]
    _, rows = _interleaving(text)
    assert re.match(rf"{re.escape(who)}\s+{re.escape(what)}\s", rows[int(number)])
    taker, label = _the_step(bundle, int(number))  # the schedule's own N-th step
    assert taker == who and what.startswith(label)
    for told in re.findall(r"\(step (\d+)\)", text):  # every step the explanation names
        assert int(told) in rows


def test_a_tracker_swimlane_numbers_its_steps_as_its_explanation_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["run", *PUBLISHED_RUN, "--out", str(out)]) == 1
    told = capsys.readouterr().out
    (number, who, what) = re.findall(
        r"the race starts at point (\d+): (\w+ #\d+) \(pid \d+\) (.+)$", told, re.MULTILINE)[0]
    (bundle,) = out.glob("*.json")
    assert main(["show", str(bundle)]) == 0
    shown = capsys.readouterr().out
    rows = _show_table(shown)
    assert max(rows) == _printed(r"repro bundle: .+ \((\d+) steps\)", told)
    header = next(line for line in shown.splitlines() if line.startswith("step |"))
    column = [cell.strip() for cell in header.split(" | ")].index(who)
    cells = [cell.strip() for cell in f"{number} | {rows[int(number)]}".split(" | ")]
    assert cells[column].startswith(f"* {what}")  # in its worker's column, marked told
    for link in re.findall(r"\(point (\d+)\)|at point (\d+)", told):
        assert int(link[0] or link[1]) in rows
    assert _the_step(bundle, int(number))[1] == what


def test_a_version_1_bundle_shows_and_replays_the_same_step_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, bundle = _plain_failure(tmp_path, capsys)
    old = _as_version_1(bundle, tmp_path / "old.json")
    shown = []
    for path in (bundle, old):
        assert main(["show", str(path)]) == 0
        shown.append(capsys.readouterr().out)
    assert shown[0] == shown[1]
    rows = _show_table(shown[1])
    assert max(rows) == len(json.loads(old.read_text())["steps"])
    start = _printed(r"the race starts at step (\d+):", text)
    assert rows[start].split("|")[-1].strip().startswith("* read counter.value")
    assert main(["replay", str(old)]) == 1
    replayed = capsys.readouterr().out
    assert _interleaving(replayed) == _interleaving(text)
    assert _printed(r"the race starts at step (\d+):", replayed) == start
