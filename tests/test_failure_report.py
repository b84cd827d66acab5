"""One failure is analysed once: every front end renders the same analysis."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import shmstress.analysis.failure as failure_module
import shmstress.analysis.focus as focus_module
from shmstress.render.failure import failure_report, report_lines
from shmstress.repro.bundle import replay_command
from tests.recorded_race import recorded_seed_race, recorded_unordered_race


def _counting(calls: dict[str, int], name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[name] = calls.get(name, 0) + 1
        return real(*args, **kwargs)
    return wrapper


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts of the analysis's passes: focus, folds of the objects' facts, full passes over
    the recording in global order."""
    calls: dict[str, int] = {}
    monkeypatch.setattr(failure_module, "focus",
                        _counting(calls, "focus", failure_module.focus))
    monkeypatch.setattr(focus_module, "FactHistory",
                        _counting(calls, "fold", focus_module.FactHistory))
    monkeypatch.setattr(focus_module, "merged", _counting(calls, "merged", focus_module.merged))
    yield calls


@pytest.mark.parametrize("recorded", [recorded_seed_race, recorded_unordered_race])
def test_one_failure_report_focuses_once_and_folds_once(
    passes: dict[str, int], recorded: Callable[[], Any]
) -> None:
    with recorded() as result:
        report = failure_report(result, "bundle.json", "shmstress run ...")
    assert passes == {"focus": 1, "fold": 1, "merged": 1}
    assert report.snippet and report.explanation and not report.problems
    lines = report_lines(report)
    assert lines[0] == "  log snippet:" and "  explanation:" in lines
    assert report.replay_command == "shmstress replay bundle.json"


def test_the_replay_command_survives_a_shell_whatever_the_path() -> None:
    awkward = Path("/tmp/nightly out/it's $HOME;.json")
    command = replay_command(awkward, "--log", "run log.txt")
    assert shlex.split(command) == ["shmstress", "replay", str(awkward), "--log", "run log.txt"]
