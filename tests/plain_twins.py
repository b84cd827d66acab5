"""Free mode against a plain loop: how often each fails a racy scenario in as many runs."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

from shmstress.plain.outcome import PlainEnd, PlainOutcome
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.session import PlainSession
from shmstress.plain.spec import FreeSpec, PlainSpec

_PLAIN_LOOP = """
import importlib.util, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))  # its sibling modules import as they would
spec = importlib.util.spec_from_file_location("scenario_under_test", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
scenario, runs = getattr(module, sys.argv[2]), int(sys.argv[3])
loop = getattr(module, "plain_loop", None)  # one that resets what a run leaves, if any
if loop is not None:
    print(loop(scenario, runs))
else:
    failures = 0
    for _ in range(runs):
        try:
            scenario()
        except AssertionError:
            failures += 1
    print(failures)
"""


CHUNK = 10
"""Runs of one side before the other takes its turn."""


def free_and_plain_failures(where: Path, function: str, runs: int,
                            trace: tuple[str, ...] = ()) -> tuple[int, int]:
    """(free-mode executions whose assertion failed, plain runs whose assertion failed),
    ``runs`` of each: the plain ones call the function in a loop, real ``multiprocessing``,
    no shmstress (the module's own ``plain_loop(scenario, runs)`` if it has one: a
    scenario whose state outlives a run resets it there). The two sides take turns of
    ``CHUNK`` runs, so that both see the same load: a race's window widens with the load in
    a plain loop, and the load a test sees changes by the second as the tests beside it
    start and stop processes (free mode's 60 runs, then a plain loop's 60, in a loaded
    pass: 10 failures against 23)."""
    spec = PlainSpec(ScenarioRef.parse(f"{where}:{function}"), free=FreeSpec(0.1),
                     trace=trace)
    free = plain = 0
    with PlainSession(spec) as session:
        for start in range(0, runs, CHUNK):
            chunk = min(CHUNK, runs - start)
            free += sum(_asserted(session.execute(None, seed))
                        for seed in range(start, start + chunk))
            done = subprocess.run(
                [sys.executable, "-c", _PLAIN_LOOP, str(where), function, str(chunk)],
                capture_output=True, text=True, timeout=600, check=True)
            plain += int(done.stdout.split()[-1])
    return free, plain


def assert_free_not_rarer(where: Path, function: str, runs: int,
                          trace: tuple[str, ...] = (), rounds: int = 4,
                          enough: int = 8) -> None:
    """Free mode fails the scenario at least as often as a plain loop (``assert_not_rarer``),
    counted in rounds of ``runs`` each until the two have failed ``enough`` times between
    them, or ``rounds`` rounds: a race both see rarely on a loaded machine (every process
    runs late, so windows seldom overlap, in a plain loop as in free mode) needs more
    runs before the comparison says anything, and one neither sees at all fails it."""
    free = plain = total = 0
    for _ in range(rounds):
        more_free, more_plain = free_and_plain_failures(where, function, runs, trace)
        free, plain, total = free + more_free, plain + more_plain, total + runs
        if free + plain >= enough:
            break
    assert_not_rarer(free, plain, total)


def _asserted(outcome: PlainOutcome) -> bool:
    failure = outcome.failure
    return (failure is not None and failure.end is PlainEnd.FAILED
            and failure.message.startswith("AssertionError"))


def assert_not_rarer(free: int, plain: int, runs: int) -> None:
    """Free mode fails the scenario at least as often as the plain loop, up to the noise of
    counting ``runs`` of each: it fails this only when the plain loop's rate is higher by
    more than 2.33 standard errors of the difference (a one-sided test at 1%), so a gap
    like 0 in 40 against 24 in 40 fails it, and 12 against 14 on a loaded machine does
    not. It also asks free mode to have failed at least once."""
    assert free > 0, f"free mode never failed in {runs} runs (a plain loop: {plain})"
    pooled = (free + plain) / (2 * runs)
    error = math.sqrt(max(pooled * (1 - pooled), 1e-9) * 2 / runs)
    gap = (plain - free) / runs
    assert gap <= 2.33 * error, (f"free mode failed {free} of {runs} runs, a plain loop "
                                 f"{plain}: rarer beyond the noise of counting")
