"""Aimed noise, interleaving coverage and the start-up transient (issue 14, items 1, 3, 4).

No timing assertions: what is checked is that the aimed policy finds and targets
near-miss pairs, that coverage is a deterministic count of a recorded trace, that
time from the end of start-up is reported and never exceeds time from run start,
and that free runs with aimed noise still replay exactly.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from shmstress.cli.main import build_parser
from shmstress.cli.run import config_from_args
from shmstress.core.config import RunConfig
from shmstress.core.control import ControlBlock
from shmstress.core.noise import AIMED, UNIFORM, NoiseConfig, NoiseGate
from shmstress.core.runtime import Runtime
from shmstress.core.shm import Arena
from shmstress.free.aim import AimedGate, AimParams, AimTables, location_code
from shmstress.free.runner import run
from shmstress.plugin.coverage import conflicting_pairs, interleaving_coverage
from shmstress.plugin.wording import wording_of
from shmstress.render.summary import render_summary
from shmstress.repro.bundle import from_free_run, from_json, to_json
from shmstress.repro.replay import Verdict, replay_bundle
from shmstress.trackers.dra.tracker import DraTracker
from tests.recorded_race import PARAMS, recorded_seed_race

AIMED_NOISE = NoiseConfig(0.3, policy=AIMED)
COUNTER = str(Path(__file__).resolve().parents[1] / "examples" / "counter_tracker.py")


def _subjects(label: str, fields: object) -> tuple[tuple[str, int], ...]:
    assert isinstance(fields, dict)
    return tuple((key, value) for key, value in fields.items() if isinstance(value, int))


def test_a_near_miss_arms_the_earlier_side_in_its_worker_only() -> None:
    """Worker 0 writes object 7 at A, worker 1 at B two points later: a near miss (A, B).
    Only A is armed, and only for worker 0 (asymmetric); a delay there that lets worker 1
    in at B counts as productive."""
    with Arena() as arena:
        tables = AimTables.allocate(arena, AimParams(object_slots=64, location_slots=64,
                                                     pair_slots=64))
        seq = arena.array("seq", 1)
        gates = [AimedGate(tables, NoiseConfig(1.0, ("yield",), policy=AIMED), _subjects,
                           seed=1, worker=w, seq_cell=seq.mv, act=False) for w in (0, 1)]
        gates[0].observe(0, 0, "A", {"item": 7})
        gates[1].observe(2, 1, "B", {"item": 7})
        stats = tables.stats()
        assert stats.targeted_pairs == 1 and stats.targeted_locations == 1
        assert stats.pairs == ((location_code("A"), location_code("B")),)

        gates[1].before_point("A")  # worker 1 is not the side that was slowed
        assert tables.stats().delays == 0
        gates[0].before_point("B")  # B is not a target
        assert tables.stats().delays == 0

        seq.mv[0] = 3
        gates[0].before_point("A")  # p=1: always delays (without sleeping: act=False)
        assert tables.stats().delays == 1
        gates[1].observe(3, 1, "B", {"item": 7})  # worker 1 got in during the delay
        gates[0].observe(4, 0, "A", {"item": 7})
        assert tables.stats().productive_delays == 1
        learnt = {code: (tries, hits) for code, tries, hits in tables.stats().locations}
        # A learnt one productive delay; the flip (B, then A) was a near miss that armed B
        assert learnt == {location_code("A"): (1, 1), location_code("B"): (0, 0)}


def test_aimed_noise_targets_near_miss_pairs_and_says_how_many() -> None:
    result = run(RunConfig(tracker="dra", variant="original", seed=5, duration=0.5,
                           noise=AIMED_NOISE, stop_on_first=False))
    assert result.aim is not None
    assert result.aim.targeted_pairs > 0 and result.aim.delays > 0
    assert f"targeted {result.aim.targeted_pairs} near-miss pairs" in render_summary(result)
    assert "(aimed)" in render_summary(result)


def test_uniform_noise_is_still_selectable() -> None:
    args = build_parser().parse_args(["run", "--noise-policy", "uniform", "--noise", "0.2"])
    config = config_from_args(args)
    assert config.noise == NoiseConfig(0.2, policy=UNIFORM)
    with Arena() as arena:
        runtime = Runtime(ControlBlock(arena, 1, 4, 4))
        runtime.attach(0, 1, config.noise)
        assert isinstance(runtime.gate, NoiseGate)
    result = run(RunConfig(tracker="dra", variant="fixed", seed=1, max_points=2000,
                           noise=config.noise))
    assert result.aim is None and result.violation_count == 0
    assert NoiseConfig(0.1, policy="loud").validate()  # an unknown policy is refused


def test_coverage_is_a_deterministic_count_of_the_recorded_trace() -> None:
    words = wording_of(DraTracker, PARAMS).words
    with recorded_seed_race() as result:
        assert result.recording is not None
        first = interleaving_coverage(result.recording, words)
        again = interleaving_coverage(result.recording, words)
        pairs = conflicting_pairs(result.recording, words)
    assert first == again == len(pairs) > 0
    # the gatherer put claim 3 in flight, then binder #1 read it and updated its status
    assert pairs == {("Signal claim pending allocation", "get claim"),
                     ("Signal claim pending allocation", "update claim status"),
                     ("Signal claim pending allocation", "informer update")}


def test_a_free_run_reports_coverage_and_time_after_start_up() -> None:
    result = run(RunConfig(tracker="dra", variant="gather-unchecked", seed=3, duration=5))
    first = result.principal_violation
    assert first is not None and first.elapsed_s is not None
    assert result.startup_s is not None and result.startup_s > 0
    after = result.first_after_startup_s
    assert after is not None and 0 <= after <= first.elapsed_s
    assert result.coverage is not None and result.coverage > 0
    summary = render_summary(result)
    assert "interleaving coverage:" in summary and "start-up" in summary


@pytest.mark.parametrize("variant", ["fixed", "single-lock"])
def test_correct_variants_stay_clean_with_the_default_noise(variant: str) -> None:
    result = run(RunConfig(tracker="dra", variant=variant, seed=2, max_points=20_000,
                           duration=30, stop_on_first=False))
    assert result.config.noise.policy == NoiseConfig().policy
    assert result.violation_count == 0, result.violations[:3]


def test_free_failures_with_aimed_noise_replay_exactly() -> None:
    """Aimed noise draws from an RNG of its own: the roles' draws, which a replay repeats,
    do not depend on where the delays landed, and the bundle says which policy ran."""
    for seed in range(1, 6):
        result = run(RunConfig(tracker=f"{COUNTER}:TicketTracker", seed=seed, duration=5,
                               noise=AIMED_NOISE))
        bundle = from_free_run(result)
        assert bundle is not None, f"seed {seed}: no violation in free mode"
        assert not bundle.replays_noise_draws
        assert from_json(to_json(bundle)).noise == AIMED_NOISE
        report = replay_bundle(bundle, record=False)
        assert report.verdict is Verdict.REPRODUCED, f"seed {seed}: {report.detail}"
        assert bundle.violation.matches(report.result.violations[0])


def test_a_uniform_bundle_is_written_as_before_and_replays_its_draws() -> None:
    """A bundle without a policy (every bundle before aimed noise) is uniform: a uniform
    bundle is written without one, so older readers and byte-for-byte checks see no change."""
    result = run(RunConfig(tracker=f"{COUNTER}:TicketTracker", seed=1, duration=5,
                           noise=NoiseConfig(0.1, policy=UNIFORM)))
    bundle = from_free_run(result)
    assert bundle is not None
    doc = to_json(bundle)
    config = doc["config"]
    assert isinstance(config, dict) and "policy" not in config["noise"]
    loaded = from_json(doc)
    assert loaded.noise.policy == UNIFORM and loaded.replays_noise_draws
    assert replace(loaded, id=bundle.id) == bundle
