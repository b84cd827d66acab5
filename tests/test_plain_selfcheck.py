"""The self-check: code outside shmstress's control never ends a search clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shmstress.controlled.strategies import PortfolioSpec
from shmstress.core.exit_reason import ExitCode
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import ScenarioRef, traced_code
from shmstress.plain.spec import PlainSpec

SCENARIOS = Path(__file__).resolve().parent / "scenarios" / "uncontrolled.py"


def search(function: str, executions: int = 20, self_check: bool = True) -> PlainResult:
    ref = ScenarioRef.parse(f"{SCENARIOS}:{function}")
    spec = PlainSpec(ref, trace=traced_code(ref, ()), self_check=self_check)
    return explore(spec, Exploration(PortfolioSpec(), 1, executions))


def test_a_c_call_writing_into_a_segment_is_named_with_its_place() -> None:
    result = search("memmove_into_segment")
    assert result.failing is None
    assert result.exit_code is ExitCode.NOT_CONTROLLED
    (line,) = result.uncontrolled
    assert line.startswith("_poke #1 changed block with no step that writes it")
    assert "uncontrolled.py:" in line and "before it ended" in line
    assert result.uncontrolled[line] == result.executions  # every execution, every time


def test_without_the_self_check_the_same_run_is_clean_and_says_so() -> None:
    result = search("memmove_into_segment", self_check=False)
    assert result.exit_code is ExitCode.CLEAN and not result.uncontrolled


def test_a_mapping_made_in_c_is_named() -> None:
    result = search("mapping_made_in_c", executions=3)
    assert result.exit_code is ExitCode.NOT_CONTROLLED
    assert any(line.startswith("_map_in_c #1 mapped ") and "unknown to shmstress" in line
               for line in result.uncontrolled), result.uncontrolled


def test_a_thread_is_named_where_it_starts() -> None:
    result = search("thread_beside", executions=3)
    assert result.exit_code is ExitCode.NOT_CONTROLLED
    (line,) = result.uncontrolled
    assert "main started thread 'log-flusher' (uncontrolled.py:" in line


@pytest.mark.parametrize("where, function", [
    (SCENARIOS, "segment_written_under_steps"),
    (Path(__file__).resolve().parents[1] / "examples" / "plain" / "numpy_counts.py", "locked"),
    (Path(__file__).resolve().parents[1] / "examples" / "plain" / "counter.py", "locked"),
    # a manager's store is the harness's own segment, mapped after the import
    (SCENARIOS.with_name("lib_manager.py"), "dict_locked"),
    # an atomic compare-and-swap writes what it names
    (SCENARIOS.with_name("lib_spinlock.py"), "locked"),
    # a segment created again under an unlinked one's name is other memory
    (SCENARIOS.with_name("lib_posix_list.py"), "reattach"),
])
def test_code_under_control_stays_clean(where: Path, function: str) -> None:
    ref = ScenarioRef.parse(f"{where}:{function}")
    spec = PlainSpec(ref, trace=traced_code(ref, ()))
    result = explore(spec, Exploration(PortfolioSpec(), 2, 60))
    assert result.failing is None, result.failing and result.failing.failure
    assert result.exit_code is ExitCode.CLEAN, result.uncontrolled


def test_the_command_exits_6_with_the_line_and_0_when_accepted(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "shmstress.cli.main", "test",
               f"{SCENARIOS}:memmove_into_segment", "--executions", "5", "--seed", "1",
               "--out", str(tmp_path)]
    refused = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)
    assert refused.returncode == ExitCode.NOT_CONTROLLED, refused.stdout + refused.stderr
    assert "not under control" in refused.stdout and "_poke #1 changed block" in refused.stdout
    accepted = subprocess.run([*command, "--accept-uncontrolled"], check=False, capture_output=True,
                              text=True, timeout=300)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "_poke #1 changed block" in accepted.stdout  # said still
