"""The plugin as a pytest user expects it to behave (issue 16, item 5).

Documented fixture arguments in ``pytest --fixtures``; the ini option naming the
default tracker; tracker paths relative to the rootdir wherever pytest starts; a
path-loaded tracker importing its sibling module; a Tracker class accepted where a
name is; tracebacks that end in the user's test; ``--stress-replay BUNDLE``; the failure
database in ``.shmstress/`` that retries a failing seed first; and JUnit properties
one per fact. Every run is a real one, of the example ticket tracker (whose racy
variant is caught within milliseconds) or the plain counter scenario.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
TICKETS = (ROOT / "examples" / "counter_tracker.py").read_text(encoding="utf-8")
COUNTER = (ROOT / "examples" / "plain" / "counter.py").read_text(encoding="utf-8")
RACY_BUDGET_S = 10  # the ticket race is caught within milliseconds; the run stops there


def _tracker_with_sibling(folder: Path) -> None:
    """The ticket tracker in ``folder``, importing a helper module that sits beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ticket_names.py").write_text('TRACKER_NAME = "tickets-with-sibling"\n')
    (folder / "ticket_tracker.py").write_text(TICKETS.replace(
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nfrom ticket_names import TRACKER_NAME\n", 1))


def _properties(junit: Path) -> dict[str, list[tuple[str, str]]]:
    """Each test case's properties, in order, by test name."""
    tree = ET.parse(junit)
    return {
        str(case.get("name")): [
            (str(p.get("name")), str(p.get("value"))) for p in case.iter("property")
        ]
        for case in tree.iter("testcase")
    }


def test_fixture_arguments_are_documented(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_nothing="def test_nothing(shmstress_run):\n    pass\n")
    result = pytester.runpytest_subprocess("--fixtures", "-p", "no:cacheprovider")
    out = result.stdout.str()
    doc = out[out.index("shmstress_run"):]
    for argument in ("expect=", "tracker=", "duration=", "seed=", "noise=", "counts=",
                     "params=", "max_points=", "checks=", "-> RunResult"):
        assert argument in doc, argument
    assert "relative to the rootdir" in doc and "failure database" in doc
    help_text = pytester.runpytest_subprocess("--help", "-p", "no:cacheprovider").stdout.str()
    for name in ("--stress-replay", "--stress-database", "shmstress_tracker",
                 "shmstress_database"):
        assert name in help_text, name


def test_ini_tracker_rootdir_paths_siblings_and_classes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tracker_with_sibling(pytester.path / "stress")
    pytester.makeini("[pytest]\nshmstress_tracker = stress/ticket_tracker.py:TicketTracker\n")
    tests = pytester.path / "tests" / "deep"
    tests.mkdir(parents=True)
    (tests / "test_tickets.py").write_text(f"""
import pytest

@pytest.mark.stress
def test_the_ini_tracker_is_the_default(shmstress_run):
    result = shmstress_run("racy", expect="violation", duration={RACY_BUDGET_S})
    assert result.config.tracker.endswith("stress/ticket_tracker.py:TicketTracker")

@pytest.mark.stress
def test_a_path_relative_to_the_rootdir(shmstress_run):
    result = shmstress_run("locked", tracker="stress/ticket_tracker.py:TicketTracker",
                           duration=0.3)
    assert result.violation_count == 0

@pytest.mark.stress
def test_an_installed_name_still_works(shmstress_run):
    shmstress_run("fixed", tracker="dra", duration=0.3)
""")
    # The class itself: defined at the top level of the test module.
    (tests / "test_classes.py").write_text(TICKETS + f"""

import pytest
from shmstress.testing.explore import InterleavingFailure, check_interleavings


def test_check_interleavings_takes_the_class():
    check_interleavings(TicketTracker, "locked", executions=10)
    with pytest.raises(InterleavingFailure, match="unique-tickets|no-lost-update"):
        check_interleavings(TicketTracker, "racy", executions=50)


@pytest.mark.stress
def test_shmstress_run_takes_the_class(shmstress_run):
    result = shmstress_run("racy", tracker=TicketTracker, expect="violation",
                           duration={RACY_BUDGET_S})
    assert result.config.tracker.endswith("test_classes.py:TicketTracker")


def test_a_class_made_in_a_function_is_refused_in_one_line(shmstress_run):
    class Local(TicketTracker):
        pass

    with pytest.raises(TypeError, match="top level of a .py file"):
        shmstress_run("racy", tracker=Local)
""")
    monkeypatch.chdir(tests)  # far below the rootdir: relative paths must not follow
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=6)


def test_tracebacks_end_in_the_users_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_tb=TICKETS + """

from shmstress.testing.explore import check_interleavings


def test_racy_interleavings():
    check_interleavings(TicketTracker, "racy", executions=50)


def test_a_misspelt_variant(shmstress_run):
    shmstress_run("no-such-variant", tracker=TicketTracker)
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--tb=long")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    failures = out[out.index("= FAILURES ="):]
    assert 'check_interleavings(TicketTracker, "racy", executions=50)' in failures
    assert 'shmstress_run("no-such-variant", tracker=TicketTracker)' in failures
    assert "no-such-variant" in failures
    for harness in ("shmstress/testing/", "shmstress/pytest/", "shmstress/plugin/",
                    "shmstress/controlled/", "shmstress/free/"):
        assert harness not in failures, harness


def test_stress_replay_fails_while_it_reproduces_and_passes_once_fixed(
    pytester: pytest.Pytester,
) -> None:
    scenario = pytester.path / "counter.py"
    scenario.write_text(COUNTER)
    made = subprocess.run(
        [sys.executable, "-m", "shmstress.cli.main", "test", f"{scenario}:racy"],
        cwd=pytester.path, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "SHMSTRESS_OUT": str(pytester.path / "out")},
    )
    assert made.returncode == 1, made.stdout + made.stderr
    (bundle,) = (pytester.path / "out").glob("*.json")
    pytester.makepyfile(test_other="def test_other():\n    raise AssertionError('not run')\n")

    again = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--stress-replay",
                                          str(bundle))
    again.assert_outcomes(failed=1, deselected=1)
    out = again.stdout.str()
    assert "reproduced" in out and "counter is 1" in out
    assert "shmstress/pytest/" not in out[out.index("= FAILURES ="):]

    # The fix: the increments are the same steps, and the assertion now holds.
    scenario.write_text(COUNTER.replace("assert counter.value == WORKERS",
                                        "assert counter.value >= 1"))
    fixed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--stress-replay",
                                          str(bundle), "-rA")
    fixed.assert_outcomes(passed=1, deselected=1)


def test_stress_replay_of_a_tracker_bundle_shows_the_explanation(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "tickets.py").write_text(TICKETS)
    made = subprocess.run(
        [sys.executable, "-m", "shmstress.cli.main", "run", "--tracker", "tickets.py:TicketTracker",
         "--mode", "controlled", "--seed", "1", "--quiet", "--out", "out"],
        cwd=pytester.path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert made.returncode == 1, made.stdout + made.stderr
    (bundle,) = (pytester.path / "out").glob("*.json")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--stress-replay",
                                           str(bundle), "--junitxml=junit.xml")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "reproduced:" in out and "explanation:" in out and "=> ticket" in out
    (properties,) = _properties(pytester.path / "junit.xml").values()
    assert ("replay_verdict", "reproduced") in properties


FLIPPING_TEST = f"""
import pathlib
import pytest

HERE = pathlib.Path(__file__).parent

@pytest.mark.stress
def test_tickets(shmstress_run):
    variant = (HERE / "variant.txt").read_text().strip()
    shmstress_run(variant, tracker="tickets.py:TicketTracker", duration={RACY_BUDGET_S})
"""


def _seed_of(junit: Path) -> int:
    (properties,) = _properties(junit).values()
    (seed,) = [int(value) for name, value in properties if name == "seed"]
    return seed


def test_failure_database_retries_a_failing_seed_first(pytester: pytest.Pytester) -> None:
    (pytester.path / "tickets.py").write_text(TICKETS)
    pytester.makepyfile(test_flip=FLIPPING_TEST)
    variant = pytester.path / "variant.txt"
    database = pytester.path / ".shmstress"
    junit = pytester.path / "junit.xml"

    def session(*extra: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--junitxml={junit}",
                                             *extra)

    variant.write_text("racy")
    first = session()
    first.assert_outcomes(failed=1)
    assert "retried seed" not in first.stdout.str()
    stored = _seed_of(junit)
    assert database.is_dir() and (database / ".gitignore").read_text().endswith("*\n")
    (entry,) = (database / "failures").glob("*.json")
    assert f'"seed": {stored}' in entry.read_text()
    # JUnit: one property per fact, no JSON blob.
    (properties,) = _properties(junit).values()
    names = [name for name, _ in properties]
    assert names == ["seed", "bundle", "replay_command", "invariant"]
    values = dict(properties)
    assert values["replay_command"] == f"shmstress replay {values['bundle']}"
    assert values["invariant"] in ("unique-tickets", "no-lost-update")

    # The next session's first attempt is the stored seed (with --stress-report too,
    # whose records stay out of the JUnit XML).
    second = session("--stress-report=report")
    assert _seed_of(junit) == stored
    if second.ret != 0:  # free mode: the same seed need not take the same turns
        assert f"retried seed {stored}" in second.stdout.str()
    assert "shmstress_trial" not in junit.read_text()

    # Deleting the database restores first-run behaviour.
    shutil.rmtree(database)
    third = session()
    third.assert_outcomes(failed=1)
    assert "retried seed" not in third.stdout.str()
    stored = _seed_of(junit)

    # Fixed: the stored seed runs first, passes, and its entry is gone.
    variant.write_text("locked")
    fourth = session()
    fourth.assert_outcomes(passed=1)
    assert _seed_of(junit) == stored
    assert list((database / "failures").glob("*.json")) == []

    # --stress-database none: nothing is stored.
    variant.write_text("racy")
    shutil.rmtree(database)
    off = session("--stress-database", "none")
    off.assert_outcomes(failed=1)
    assert not database.exists()


def test_the_database_follows_the_ini_option(pytester: pytest.Pytester) -> None:
    (pytester.path / "tickets.py").write_text(TICKETS)
    pytester.makepyfile(test_flip=FLIPPING_TEST)
    (pytester.path / "variant.txt").write_text("racy")
    pytester.makeini("[pytest]\nshmstress_database = cache/stress-failures\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", str(pytester.path))
    result.assert_outcomes(failed=1)
    assert list((pytester.path / "cache" / "stress-failures" / "failures").glob("*.json"))
    assert not (pytester.path / ".shmstress").exists()


def test_failure_database_is_a_cache_that_never_breaks_a_test(tmp_path: Path) -> None:
    from shmstress.testing.failure_db import FailureDatabase, StoredFailure

    database = FailureDatabase(tmp_path / ".shmstress")
    assert database.fetch("t.py::test", 0) is None
    database.save("t.py::test", 0, StoredFailure(seed=5, bundle="/b.json", invariant="x"))
    database.save("t.py::test", 1, StoredFailure(seed=6))
    assert database.fetch("t.py::test", 0) == StoredFailure(seed=5, bundle="/b.json",
                                                            invariant="x")
    assert database.fetch("t.py::other", 0) is None
    database.delete("t.py::test", 0)
    assert database.fetch("t.py::test", 0) is None
    assert database.fetch("t.py::test", 1) == StoredFailure(seed=6)
    database.delete("t.py::test", 1)
    assert list((tmp_path / ".shmstress" / "failures").iterdir()) == []

    database.save("t.py::test", 0, StoredFailure(seed=5))
    (entry,) = (tmp_path / ".shmstress" / "failures").iterdir()
    entry.write_text("{not json")  # a torn or hand-edited file is a miss, not an error
    assert database.fetch("t.py::test", 0) is None

    blocked = FailureDatabase(tmp_path / "a-file")
    (tmp_path / "a-file").write_text("")
    with pytest.warns(UserWarning, match="not updated"):
        blocked.save("t.py::test", 0, StoredFailure(seed=1))


def test_shmstress_run_takes_a_noise_policy(pytester: pytest.Pytester) -> None:
    """Aimed noise from a test: its learning lands in the database; a misspelt policy is
    refused in one line."""
    pytester.makepyfile(test_aimed=f"""
import pytest

@pytest.mark.stress
def test_aimed(shmstress_run):
    result = shmstress_run("gather-unchecked", expect="violation", noise_policy="aimed",
                           duration={RACY_BUDGET_S})
    assert result.config.noise.policy == "aimed"
    assert result.aim is not None

def test_misspelt(shmstress_run):
    shmstress_run("fixed", noise_policy="aimless", duration=0.2)
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    assert "aimless" in result.stdout.str()
    assert list((pytester.path / ".shmstress" / "learning").glob("*.json"))
