"""The rough edges a new user hits in the first hour (issue 30, item 4), one test each."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

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
