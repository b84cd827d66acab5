"""``bench --suite --shard I/N``: each shard runs its block of the suite's trials into its
checkpoint directory; gathered into one, the command without --shard prints the figures of
the suite run whole, running nothing again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from shmstress.cli.main import main

SHARDS = 3
SUITE = ["bench", "--suite", "sctbench", "--program", "stack_bad", "--strategy", "random-walk",
         "--strategy", "exhaustive-b0", "--twin-strategy", "pct-d3", "--seeds", "2",
         "--executions", "5", "--twin-executions", "2", "--jobs", "1"]
# stack_bad: random-walk seeds 0 and 1, exhaustive-b0 once; its twin under pct-d3: 4 trials


def _figures(path: Path) -> object:
    """A suite's JSON without its wall times."""
    def strip(data: object) -> object:
        if isinstance(data, dict):
            return {k: strip(v) for k, v in data.items() if "seconds" not in k
                    and k not in ("median_s", "median_s_sum")}
        return [strip(item) for item in data] if isinstance(data, list) else data
    return strip(json.loads(path.read_text()))


def test_gathered_shards_give_the_figures_of_the_whole_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = tmp_path / "whole.json"
    assert main([*SUITE, "--json", str(whole)]) == 0
    gathered = tmp_path / "gathered"
    gathered.mkdir()
    for index in range(1, SHARDS + 1):
        directory = tmp_path / f"shard-{index}"
        capsys.readouterr()
        assert main([*SUITE, "--shard", f"{index}/{SHARDS}", "--checkpoint",
                     str(directory)]) == 0
        captured = capsys.readouterr()
        assert f"shard {index}/{SHARDS}: " in captured.out and "of the suite's 4 trials" in (
            captured.out)
        for path in directory.iterdir():
            shutil.copy(path, gathered / path.name)
    merged = tmp_path / "merged.json"
    capsys.readouterr()
    assert main([*SUITE, "--checkpoint", str(gathered), "--json", str(merged)]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("finished in an earlier run") == 4, captured.err
    assert _figures(merged) == _figures(whole)


@pytest.mark.parametrize(("extra", "fragment"), [
    (["--shard", "0/2", "--checkpoint", "c"], "--shard must be I/N"),
    (["--shard", "3/2", "--checkpoint", "c"], "--shard must be I/N"),
    (["--shard", "x", "--checkpoint", "c"], "--shard must be I/N"),
    (["--shard", "1/2"], "--checkpoint"),
    (["--shard", "5/5", "--checkpoint", "c"], "the suite has 4 trials"),
])
def test_bad_suite_shards_are_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    extra: list[str], fragment: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*SUITE, *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1, captured.err
    assert fragment in captured.err


def test_a_shard_needs_a_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--shard", "1/2"]) == 2
    assert "--shard splits a suite's trials: it needs --suite" in capsys.readouterr().err
