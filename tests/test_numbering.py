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
from shmstress.controlled.strategies import StrategySpec
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
                            ControlledOptions(StrategySpec("pct"), executions=200))
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
