"""ruff, mypy and import-linter are part of the suite: a lint or type error, or an import
against the layers, fails CI like a test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "ruff", "check", "."],
        [sys.executable, "-m", "mypy"],
        [sys.executable, "-m", "importlinter.cli", "--no-cache"],
    ],
    ids=["ruff", "mypy", "import-linter"],
)
def test_code_is_clean(command: list[str]) -> None:
    module = command[2].split(".")[0]
    if shutil.which(module) is None and not _importable(module):
        pytest.fail(f"{module} is not installed; install the dev extras")
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _importable(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"],
                          capture_output=True, check=False).returncode == 0
