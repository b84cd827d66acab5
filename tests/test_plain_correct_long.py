"""Every correct twin of the plain-code libraries runs 1,000 executions clean (nightly).

The default suite runs each 100 times; this is the count issue 28 asks for, through the
command a user types, in a process of its own (forked executions from a small process).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCENARIOS = Path(__file__).parent / "scenarios"
EXECUTIONS = 1000


@pytest.mark.stress
@pytest.mark.nightly
@pytest.mark.parametrize("target", [
    "lib_queue.py:pipeline_locked", "lib_pipe.py:shared_end_locked",
    "lib_pool.py:pool_locked", "lib_pool.py:executor_locked", "lib_manager.py:dict_locked",
    "lib_mmap_dict.py:locked", "lib_posix_list.py:reattach", "lib_spinlock.py:locked",
    "lib_declared.py:locked", "lib_seats.py:booking_locked", "lib_names.py:pid_named_locked",
])
def test_a_correct_twin_runs_1000_executions_clean(target: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "shmstress", "test", str(SCENARIOS / target),
         "--executions", str(EXECUTIONS), "--seed", "1", "--quiet", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"executions: {EXECUTIONS:,} ({EXECUTIONS:,} finished)" in done.stdout, done.stdout
    assert "failures: none" in done.stdout, done.stdout
    assert not list(tmp_path.iterdir())  # no bundle: nothing failed
