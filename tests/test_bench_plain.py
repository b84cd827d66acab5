"""The plain-code bench section on tiny budgets: its figures are all there and sane.

No timing threshold (the machines are shared and noisy): only that every rate is
positive, that shares are percentages, that tracing adds no steps to a Value scenario,
that the racy counter is found by shmstress, and Frontrun's figures are either measured
or said to be missing.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import pytest

from shmstress.bench.plain import (
    FRONTRUN_MISSING,
    FRONTRUN_STRATEGIES,
    SETTINGS,
    PlainBudgets,
    frontrun_first_failures,
    render_plain_bench,
    run_plain_bench,
)

TINY = PlainBudgets(pingpong_round_trips=2_000, step_executions=5, counter_executions=5,
                    trials=2, detection_budget=50, process_executions=3, bare_forks=20)


def test_the_plain_bench_measures_every_figure_on_tiny_budgets() -> None:
    logged: list[str] = []
    bench = run_plain_bench(seed=0, log=logged.append, budgets=TINY)

    assert logged and all(line.startswith("plain: ") for line in logged)
    assert bench.pingpong_round_trips_per_s > 0
    assert len(bench.steps) == len(bench.counters) == len(SETTINGS) == 4
    for throughput in bench.steps:
        assert throughput.executions == TINY.step_executions
        assert throughput.steps_per_s > 0
        assert 0 < bench.share(throughput) < 1_000  # a percentage of the ping-pong
    # the same code with tracing and the self-check off and on: the same steps (what
    # each costs is the bench's to say, not a test's: the machines are noisy)
    assert len({throughput.steps for throughput in bench.steps}) == 1
    assert bench.steps[0].steps / bench.steps[0].executions > 200  # steps, not forks
    assert [t.what.partition(", ")[2] for t in bench.steps] == [
        setting.describe() for setting in SETTINGS]
    for counter in bench.counters:
        assert counter.executions == TINY.counter_executions
        assert counter.executions_per_s > 0

    processes = bench.processes
    assert processes is not None
    assert processes.few.executions == processes.many.executions == TINY.process_executions
    assert processes.few.executions_per_s > 0 and processes.many.executions_per_s > 0
    assert processes.bare_fork_s > 0
    # started and joined processes are steps: more processes, more steps
    assert processes.many.steps > processes.few.steps

    ours = bench.shmstress
    assert ours.trials == TINY.trials and ours.found == TINY.trials
    assert all(1 <= e <= TINY.detection_budget for e in ours.executions)
    assert 1 <= ours.median_executions <= ours.max_executions
    assert 0 < ours.median_s <= ours.max_s

    if bench.frontrun is None:
        assert bench.frontrun_missing == FRONTRUN_MISSING
    else:
        assert bench.frontrun_missing == ""
        assert [f.strategy for f in bench.frontrun.strategies] == list(FRONTRUN_STRATEGIES)
        for theirs in bench.frontrun.strategies:
            assert theirs.trials == TINY.trials
            assert all(1 <= e <= TINY.detection_budget for e in theirs.executions)
            assert all(s > 0 for s in theirs.seconds)

    text = "\n".join(render_plain_bench(bench))
    assert "steps/s" in text and "executions/s" in text
    assert all(setting.describe() in text for setting in SETTINGS)
    assert "shmstress (2 processes)" in text
    assert "one more process" in text and "bare forks" in text and "bare os.fork" in text
    assert ("median wall time to the first failure" in text) == (bench.frontrun is not None)
    assert ("frontrun (2 threads)" in text) != (FRONTRUN_MISSING in text)
    missing = "\n".join(render_plain_bench(replace(bench, frontrun=None,
                                                   frontrun_missing=FRONTRUN_MISSING)))
    assert FRONTRUN_MISSING in missing and "frontrun (2 threads)" not in missing


def test_without_frontrun_the_comparison_says_it_is_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    find_spec = importlib.util.find_spec

    def hidden(name: str, package: str | None = None) -> object:
        return None if name == "frontrun" else find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", hidden)  # as plain.py looks it up
    assert frontrun_first_failures(trials=1, budget=10, seed=0) is None
