"""Free mode is never less able than a plain loop: the step lock orders the steps, not the
code between them, so a race inside a library with no point inside still happens, and the
noise at the library's door makes it happen more often than in a plain run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from shmstress.controlled.strategies.base import StrategySpec
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.session import FreeSpec, PlainSpec
from shmstress.render.plain_report import loose_lines
from shmstress.repro.plain_bundle import from_outcome
from shmstress.repro.plain_replay import replay_plain

LIBRARY = Path(__file__).resolve().parent / "scenarios" / "lib_jsonstore.py"
RUNS = 120


_PLAIN_LOOP = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("lib_jsonstore", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
failures = 0
for _ in range(int(sys.argv[2])):
    try:
        module.racy()
    except AssertionError:
        failures += 1
print(failures)
"""


def _plain_loop_failures(runs: int) -> int:
    """The scenario run as plain Python, ``runs`` times, in an interpreter of its own (its
    segments bring multiprocessing's resource tracker along): how often it fails."""
    done = subprocess.run([sys.executable, "-c", _PLAIN_LOOP, str(LIBRARY), str(runs)],
                          check=True, capture_output=True, text=True, timeout=600)
    return int(done.stdout.split()[-1])


def _free_failures(runs: int) -> tuple[int, list[object]]:
    """Free mode over ``runs`` executions, nothing traced (a library shmstress cannot see
    into): how many failed, and the failing executions' bundles."""
    spec = PlainSpec(ScenarioRef.parse(f"{LIBRARY}:racy"), free=FreeSpec())
    left, seed, bundles = runs, 0, []
    while left > 0:
        result = explore(spec, Exploration(StrategySpec("free"), seed, left))
        left -= result.executions
        if result.failing is not None and result.failing.failed:
            bundles.append(from_outcome("lib_jsonstore.py:racy", spec, result.strategy, seed,
                                        result.failing_index, result.failing))
        seed += 1
    return len(bundles), bundles


def test_free_mode_finds_a_race_inside_untraced_code_at_least_as_often_as_a_plain_loop() -> None:
    plain = _plain_loop_failures(RUNS)
    free, bundles = _free_failures(RUNS)
    assert free >= max(plain, 1), (free, plain)
    # its bundles say what a replay cannot promise: the library ran beside the steps
    bundle = bundles[0]
    assert bundle.loose  # type: ignore[attr-defined]
    report = replay_plain(bundle)  # type: ignore[arg-type]
    assert loose_lines(report.bundle.loose)
