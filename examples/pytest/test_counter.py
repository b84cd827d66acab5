"""A user's test file written against ``shmstress.testing`` alone, typed: ``mypy --strict``
passes on it, and pytest runs it from the project's directory:

    python -m pytest examples/pytest/test_counter.py

One decorated test of the locked counter (clean), the racy counter checked from inside a
test (it fails, and its bundle replays the failure), and the built-in tracker through the
``shmstress_run`` fixture. The scenarios are module-level functions: every execution
imports this file afresh in a process of its own.
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path

import pytest

from shmstress.testing import (
    ConcurrencyFailure,
    PctSpec,
    RunResult,
    StressRun,
    check,
    concurrency_test,
    replay,
)

WORKERS = 2


def _increment(counter: Synchronized[int]) -> None:
    counter.value += 1  # BAD: a read, then a write


def _increment_locked(counter: Synchronized[int]) -> None:
    with counter.get_lock():
        counter.value += 1


def _count(target: str) -> None:
    counter: Synchronized[int] = mp.Value("i", 0)
    work = _increment if target == "racy" else _increment_locked
    workers = [mp.Process(target=work, args=(counter,)) for _ in range(WORKERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.value == WORKERS, f"{WORKERS} increments, counter is {counter.value}"


def racy() -> None:
    _count("racy")


@concurrency_test(executions=100, strategy=PctSpec(depth=2))
def test_the_locked_counter_loses_no_increment() -> None:
    _count("locked")


def test_the_racy_counter_fails_and_its_bundle_replays_the_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHMSTRESS_OUT", str(tmp_path))  # where a failing check's bundle goes
    with pytest.raises(ConcurrencyFailure, match="counter is 1"):
        check(racy, executions=200)
    (bundle,) = tmp_path.glob("*.json")
    with pytest.raises(ConcurrencyFailure, match="reproduced"):
        replay(bundle)


@pytest.mark.stress
def test_the_fixed_tracker_stays_clean(shmstress_run: StressRun) -> None:
    result: RunResult = shmstress_run("fixed", duration=0.5)
    assert not result.violations
