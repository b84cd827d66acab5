"""``shmstress.testing`` is the one module a test imports: ``check`` for a function or a
tracker, ``concurrency_test``, ``replay``, the fixture's types and one failure type; a
user's test file written against it type-checks strictly and runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shmstress import testing
from shmstress.core.errors import ConcurrencyFailure, ConfigError
from shmstress.repro.replay import Verdict
from shmstress.testing.explore import InterleavingFailure
from shmstress.testing.lincheck.check import LincheckFailure

ROOT = Path(__file__).resolve().parents[1]
USER_TEST = ROOT / "examples" / "pytest" / "test_counter.py"
COUNTER = ROOT / "examples" / "plain" / "counter.py"


def test_the_module_exports_what_its_docstring_lists_and_each_name_resolves() -> None:
    assert set(testing.__all__) >= {"check", "concurrency_test", "replay", "ConcurrencyFailure",
                                    "StressRun", "RunResult", "PctSpec", "declare_lock"}
    for name in testing.__all__:
        assert getattr(testing, name) is not None
        assert f"``{name}``" in (testing.__doc__ or ""), f"{name} is not in the docstring"
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        _ = testing.nothing_here  # type: ignore[attr-defined]


def test_one_failure_type_for_every_check() -> None:
    assert InterleavingFailure is ConcurrencyFailure
    assert issubclass(LincheckFailure, ConcurrencyFailure)
    assert issubclass(ConcurrencyFailure, AssertionError)  # pytest shows it as a failed assert


def test_importing_it_brings_in_no_search_hypothesis_or_plugin() -> None:
    """Every execution's host imports it when a scenario's module does."""
    probe = ("import sys, shmstress.testing; heavy = [m for m in ('hypothesis', "
             "'shmstress.plain.runner', 'shmstress.controlled.runner', 'shmstress.pytest.plugin')"
             " if m in sys.modules]; print(heavy)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def test_a_user_test_file_type_checks_strictly() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", str(USER_TEST)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_user_test_file_runs_as_written(tmp_path: Path) -> None:
    """Its racy check fails inside the test as it should, so the file's tests all pass."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(USER_TEST),
         "--basetemp", str(tmp_path / "base")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def _racy() -> None:
    """Not module-level in a file a host could import by name: check must refuse it."""


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: testing.check("dra", "fixed", trace=("x",)),
     "trace: not a parameter of a check of a tracker"),
    (lambda: testing.check(_racy, counts={"binder": 1}),
     "counts: not a parameter of a check of plain code"),
    (lambda: testing.check(_racy, "fixed"), "a variant is a tracker's"),
    (lambda: testing.check(42), "check takes a function or a tracker, not 42"),
    (lambda: testing.check("dra", "fixed", strategy="dpor", depth=2),
     "--depth applies only with --strategy pct"),
    # an explicit 0 is refused, not taken for the default
    (lambda: testing.check("dra", "fixed", executions=0), "--executions must be >= 1, got 0"),
    (lambda: testing.check("dra", "fixed", run_steps=0), "--points must be >= 1, got 0"),
    (lambda: testing.check(_racy, executions=0), "--executions must be at least 1, got 0"),
    (lambda: testing.check(_racy, max_steps=0), "--max-steps must be at least 1, got 0"),
    (lambda: testing.check(_racy, max_processes=0), "--max-processes must be at least 1, got 0"),
])
def test_a_parameter_that_means_nothing_for_the_target_is_one_line(
    call: object, fragment: str
) -> None:
    with pytest.raises(ConfigError) as error:
        call()  # type: ignore[operator]
    assert fragment in str(error.value) and "\n" not in str(error.value)


def test_check_runs_a_tracker_and_raises_the_one_failure_type(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConcurrencyFailure, match="found a failing interleaving of dra"):
        testing.check("dra", "gather-unchecked", strategy=testing.PctSpec(depth=3),
                      executions=300, out=tmp_path)
    result = testing.check("dra", "fixed", strategy="random_walk", executions=3)
    assert result.executions == 3 and result.failing is None


def test_replay_raises_while_the_failure_comes_back_and_says_once_the_fix_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    scenario = project / "counter.py"
    shutil.copy(COUNTER, scenario)
    monkeypatch.chdir(project)  # the project whose files a bundle may import
    made = subprocess.run(
        [sys.executable, "-m", "shmstress", "test", "counter.py:racy", "--out", "out"],
        cwd=project, capture_output=True, text=True, timeout=300, check=False)
    assert made.returncode == 1, made.stdout + made.stderr
    (bundle,) = (project / "out").glob("*.json")
    with pytest.raises(ConcurrencyFailure, match="reproduced"):
        testing.replay(bundle)
    scenario.write_text(scenario.read_text().replace(
        "assert counter.value == WORKERS", "assert counter.value >= 1"))
    assert testing.replay(bundle) is Verdict.NOT_REPRODUCED
    with pytest.raises(ConfigError, match="changed since the bundle was written"):
        testing.replay(bundle, allow_changed=False)
