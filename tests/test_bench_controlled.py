"""The controlled bench's CPU-time figures on tiny budgets: measured, and rendered beside
the wall-clock ratio. No timing threshold (the machines are shared and noisy)."""

from __future__ import annotations

from shmstress.bench.controlled import (
    ControlledBench,
    measure_pingpong,
    render_controlled_bench,
    throughput,
)
from shmstress.controlled.strategies import StrategySpec
from shmstress.core.config import RunConfig


def test_cpu_time_per_step_and_per_round_trip_are_measured_and_rendered() -> None:
    pingpong = measure_pingpong(2_000)
    assert pingpong.round_trips_per_s > 0
    assert pingpong.cpu_us_per_round_trip > 0  # both sides, the pong's read before it exits
    walk = throughput("random walk", RunConfig(tracker="dra", variant="fixed", seed=1,
                                               scenario="one-device"),
                      StrategySpec("random_walk"), 5, 20)
    assert walk.steps > 0 and walk.cpu_seconds > 0
    assert walk.cpu_us_per_step == 1e6 * walk.cpu_seconds / walk.steps
    lines = render_controlled_bench(ControlledBench(
        pingpong.round_trips_per_s, pingpong.cpu_us_per_round_trip, [walk]))
    assert any("us CPU per step" in line and "of the ping-pong by CPU time" in line
               for line in lines)
    assert any("us CPU per round trip" in line for line in lines)
