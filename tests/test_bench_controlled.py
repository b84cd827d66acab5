"""The controlled bench's CPU-time figures on tiny budgets: measured, and rendered beside
the wall-clock ratio. No timing threshold (the machines are shared and noisy)."""

from __future__ import annotations

from shmstress.bench.controlled import (
    RATIO_GOALS,
    STRATEGIES,
    ControlledBench,
    Throughput,
    measure_pingpong,
    render_controlled_bench,
    throughput,
)
from shmstress.controlled.strategies import PctSpec, RandomWalkSpec
from shmstress.core.config import RunConfig


def test_cpu_time_per_step_and_per_round_trip_are_measured_and_rendered() -> None:
    pingpong = measure_pingpong(2_000)
    assert pingpong.round_trips_per_s > 0
    assert pingpong.cpu_us_per_round_trip > 0  # both sides, the pong's read before it exits
    walk = throughput("random walk", RunConfig(tracker="dra", variant="fixed", seed=1,
                                               scenario="one-device"),
                      RandomWalkSpec(), 5, 20, goal=0.5)
    assert walk.steps > 0 and walk.cpu_seconds > 0
    assert walk.cpu_us_per_step == 1e6 * walk.cpu_seconds / walk.steps
    lines = render_controlled_bench(ControlledBench(
        pingpong.round_trips_per_s, pingpong.cpu_us_per_round_trip, [walk]))
    assert any("us CPU per step" in line and "of the ping-pong by CPU time" in line
               for line in lines)
    assert any("us CPU per round trip" in line for line in lines)
    ratio = walk.steps_per_s / pingpong.round_trips_per_s
    verdict = "met" if ratio >= 0.5 else "NOT met"
    assert any(f"goal >= 50%: {verdict}" in line for line in lines)


def test_each_strategy_row_carries_the_issues_goal_for_it() -> None:
    """Random walk's goal is 50% of the ping-pong, PCT's 70%; rows without a goal say none."""
    rows = [Throughput(spec.describe(), 1, 10, 1.0, goal=RATIO_GOALS.get(spec))
            for spec in STRATEGIES]
    lines = render_controlled_bench(ControlledBench(100.0, 1.0, rows))
    goals = {spec.describe(): RATIO_GOALS.get(spec) for spec in STRATEGIES}
    assert goals[RandomWalkSpec().describe()] == 0.5
    assert goals[PctSpec(depth=3).describe()] == 0.7
    for what, goal in goals.items():
        line = next(line for line in lines if line.startswith(f"  {what} "))
        assert ("goal >=" in line) == (goal is not None)
        if goal is not None:
            assert f"goal >= {goal:.0%}: NOT met" in line  # 10 steps/s of 100 round trips/s
