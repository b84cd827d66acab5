"""The rough edges a new user hits in the first hour (issue 30, item 4), one test each."""

from __future__ import annotations

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
