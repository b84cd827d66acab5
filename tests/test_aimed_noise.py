"""Aimed noise, interleaving coverage and the start-up transient (issue 14, items 1, 3, 4).

No timing assertions: what is checked is that the aimed policy finds and targets
near-miss pairs, that coverage is a deterministic count of a recorded trace, that
time from the end of start-up is reported and never exceeds time from run start,
and that free runs with aimed noise still replay exactly.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from shmstress.bench.suite import BenchOptions
from shmstress.cli.main import build_parser
from shmstress.cli.run import config_from_args
from shmstress.core.access import EVERY, Access
from shmstress.core.config import RunConfig
from shmstress.core.control import _CONTROL_LEN as CONTROL_LEN
from shmstress.core.control import SEQ, VIOLATIONS, ControlBlock
from shmstress.core.noise import AIMED, UNIFORM, NoiseConfig, NoiseGate
from shmstress.core.runtime import Runtime
from shmstress.core.shm import Arena, SharedArray
from shmstress.free.aim import (
    AimedGate,
    AimParams,
    AimTables,
    LocationRecord,
    delay_probability,
    location_code,
)
from shmstress.free.epochs import CELLS as EPOCH_CELLS
from shmstress.free.epochs import Epochs
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
        tables = AimTables.allocate(arena, AimParams(object_slots=64, location_slots=64, epoch_ms=0,
                                                     pair_slots=64))
        seq = arena.array("seq", CONTROL_LEN)
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
        assert tables.stats().productive_delays == 1  # B then A: an order not seen before
        learnt = {code: (tries, hits) for code, tries, hits in tables.stats().locations}
        # A learnt one productive delay; the flip (B, then A) was a near miss that armed B
        assert learnt == {location_code("A"): (1, 1), location_code("B"): (0, 0)}


def _armed(arena: Arena, probability: float, handoff: bool = False,
           ) -> tuple[AimTables, SharedArray, list[AimedGate]]:
    """Location A armed in worker 0 by a near miss with worker 1's B, as above."""
    tables = AimTables.allocate(arena, AimParams(object_slots=64, location_slots=64, epoch_ms=0,
                                                 pair_slots=64, handoff=handoff))
    control = arena.array("control", CONTROL_LEN)
    gates = [AimedGate(tables, NoiseConfig(probability, ("yield",), policy=AIMED), _subjects,
                       seed=1, worker=w, seq_cell=control.mv, act=False) for w in (0, 1)]
    gates[0].observe(0, 0, "A", {"item": 7})
    gates[1].observe(2, 1, "B", {"item": 7})
    control.mv[SEQ] = 3
    return tables, control, gates


def _row(tables: AimTables, label: str) -> LocationRecord:
    row = tables.row(label)
    assert row is not None, f"{label} is not a target"
    return row


def test_delays_that_only_repeat_a_known_order_back_off_where_violations_need_none() -> None:
    """Worker 1 gets in at B during every delay of worker 0 at A (a hot object: the old
    signal called each of these productive). Only the first showed a new order (B, then
    A); the others repeat it. Violations keep coming after passes without a delay, never
    after a delay (a race out of the points' reach, as in a library call): A's delay
    probability falls to the low floor, and delays become rare."""
    with Arena() as arena:
        tables, control, gates = _armed(arena, 0.3)
        params = tables.params
        boosted = 0.9
        for _ in range(400):
            seq = int(control.mv[SEQ])
            delays = _row(tables, "A").delays
            gates[0].before_point("A")
            gates[1].observe(seq, 1, "B", {"item": 7})
            gates[0].observe(seq + 1, 0, "A", {"item": 7})
            if _row(tables, "A").delays == delays:  # a pass without a delay, then a violation
                control.mv[VIOLATIONS] += 1
            control.mv[SEQ] = seq + 2
        row = _row(tables, "A")
        assert row.productive == 1 and row.delay_violations == 0
        assert row.pass_violations >= params.evidence
        assert delay_probability(row, boosted, params) == boosted * params.floor
        assert row.delays < row.passes / 4  # most passes went by without a delay


def test_delays_followed_by_violations_keep_their_probability() -> None:
    """The same hot object, but each delay at A is followed by a violation its worker
    reports (and no pass without a delay is): A keeps delaying at the full probability."""
    with Arena() as arena:
        tables, control, gates = _armed(arena, 0.3)
        for _ in range(400):
            seq = int(control.mv[SEQ])
            delays = _row(tables, "A").delays
            gates[0].before_point("A")
            gates[1].observe(seq, 1, "B", {"item": 7})
            gates[0].observe(seq + 1, 0, "A", {"item": 7})
            if _row(tables, "A").delays > delays:  # worker 0 reports one before its next point
                control.mv[VIOLATIONS] += 1
            control.mv[SEQ] = seq + 2
        row = _row(tables, "A")
        assert row.delay_violations > 0 and row.pass_violations == 0
        assert delay_probability(row, 0.9, tables.params) == 0.9
        assert row.delays > row.passes  # p = 0.9 all along


def test_the_delay_probability_compares_delays_with_passes() -> None:
    params = AimParams()
    fresh, boosted = LocationRecord(), 0.3
    assert delay_probability(fresh, boosted, params) == boosted
    # no violation yet: backs off, but keeps searching at the plain noise probability
    silent = LocationRecord(delays=200, productive=1, passes=5000)
    assert delay_probability(silent, boosted, params) == boosted * params.search_floor
    # violations without delays: backs off to the low floor
    needless = LocationRecord(delays=200, productive=1, passes=5000, pass_violations=40)
    assert delay_probability(needless, boosted, params) == boosted * params.floor
    lifted = LocationRecord(delays=200, passes=5000, pass_violations=10, delay_violations=20)
    assert delay_probability(lifted, boosted, params) == boosted
    # violations as often after a pass as after a delay: the delays are not what helps
    alike = LocationRecord(delays=200, passes=5000, pass_violations=500, delay_violations=20)
    assert delay_probability(alike, boosted, params) == boosted * params.floor


def test_aimed_noise_targets_near_miss_pairs_and_says_how_many() -> None:
    result = run(RunConfig(tracker="dra", variant="original", seed=5, duration=0.5,
                           noise=AIMED_NOISE, stop_on_first=False))
    assert result.aim is not None
    assert result.aim.targeted_pairs > 0 and result.aim.delays > 0
    assert f"targeted {result.aim.targeted_pairs} near-miss pairs" in render_summary(result)
    assert "(aimed)" in render_summary(result)


def test_the_default_policy_is_named_once_and_used_everywhere() -> None:
    """``NoiseConfig.policy`` names it; the run and bench options, a run's configuration and
    the bench's own runs all take it from there."""
    default = NoiseConfig().policy
    # what shmstress bench measured best (issue 14): uniform noise found the racy DRA
    # variants' first violation sooner and cost nothing on the library race; aimed noise's
    # steady-state rate was higher
    assert default == UNIFORM
    assert config_from_args(build_parser().parse_args(["run"])).noise.policy == default
    assert build_parser().parse_args(["bench"]).noise_policy == default
    assert RunConfig(tracker="dra").noise.policy == default
    assert BenchOptions().policy == default


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
        # until the first violation (seconds on an idle machine), within 60 s: at load 18 one
        # seed of five found none in 5 s, which says nothing of whether a failure replays
        result = run(RunConfig(tracker=f"{COUNTER}:TicketTracker", seed=seed, duration=60,
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


def test_a_handoff_waits_for_the_others_points_not_for_a_drawn_time() -> None:
    """The near miss (A, B) was two points apart: A's row keeps that gap. A delay at A
    then lasts until the other workers have made points (here a thread stands for them),
    however long the cap: with a cap of 10^4 s, only their points can end it."""
    with Arena() as arena:
        tables, control, _ = _armed(arena, 1.0, handoff=True)
        assert _row(tables, "A").gap == 2
        gate = AimedGate(tables, NoiseConfig(1.0, ("sleep",), max_sleep_us=2.5e9,
                                             policy=AIMED),
                         _subjects, seed=1, worker=0, seq_cell=control.mv)
        others = threading.Thread(target=_make_points, args=(control, 3))
        others.start()
        gate.before_point("A")
        others.join()
        assert _row(tables, "A").delays == 1
        assert control.mv[SEQ] >= 3 + 1  # the delay ended only once others made points


def _make_points(control: SharedArray, points: int) -> None:
    for _ in range(points):
        time.sleep(0.01)
        control.mv[SEQ] += 1


def test_declared_accesses_need_a_write_and_a_scan_meets_each_object() -> None:
    """Where a point declares what it reads and writes, two reads of one object are no
    near miss (TSVD's rule); a write after them is; and a write of one object right after
    a scan of every object of its kind is one too."""
    declared = {"R": False, "W": True}

    def accesses(label: str, fields: object) -> tuple[Access, ...] | None:
        assert isinstance(fields, dict)
        if label == "SCAN":
            return (Access("item", EVERY, False),)
        return (Access("item", int(fields["item"]), declared[label]),)

    with Arena() as arena:
        tables = AimTables.allocate(arena, AimParams(object_slots=64, location_slots=64, epoch_ms=0,
                                                     pair_slots=64))
        seq = arena.array("seq", CONTROL_LEN)
        gates = [AimedGate(tables, NoiseConfig(1.0, ("yield",), policy=AIMED), _subjects,
                           seed=1, worker=w, seq_cell=seq.mv, act=False, accesses=accesses)
                 for w in (0, 1)]
        gates[0].observe(0, 0, "R", {"item": 7})
        gates[1].observe(1, 1, "R", {"item": 7})
        assert tables.stats().targeted_pairs == 0
        gates[0].observe(2, 0, "W", {"item": 7})
        assert tables.stats().pairs == ((location_code("R"), location_code("W")),)
        gates[1].observe(3, 1, "SCAN", {})
        gates[0].observe(4, 0, "W", {"item": 9})
        assert (location_code("SCAN"), location_code("W")) in tables.stats().pairs


def _epochs_seen(violations_on: int, violations_off: int, epochs: int = 200,
                 ) -> tuple[list[bool], tuple[int, int, int, int]]:
    """Drive one worker's ``Epochs`` through ``epochs`` epochs of 1 ms, reporting the given
    violations in each epoch with delays on or off; which side each epoch was on."""
    with Arena() as arena:
        cells = arena.array("epochs", EPOCH_CELLS)
        view = Epochs(cells, epoch_ms=1.0, control=4, evidence=16)
        sides, violations = [], 0
        for epoch in range(1, epochs + 1):
            on = view.delays_on(epoch * 1_000_000 + 1, violations)
            assert view.delays_on(epoch * 1_000_000 + 999_999, violations) == on  # one epoch
            sides.append(on)
            violations += violations_on if on else violations_off
        return sides, view.counts()


def test_the_run_keeps_delays_on_where_the_on_epochs_find_more() -> None:
    """Violations only come with delays on: delays stay on but for one epoch in four,
    which keeps measuring the other side."""
    sides, (on_v, on_n, off_v, off_n) = _epochs_seen(violations_on=2, violations_off=0)
    assert on_v > 0 and off_v == 0 and on_n + off_n == len(sides) - 1
    assert sum(sides) == len(sides) - len(sides) // 4  # every 4th epoch off, the rest on
    quiet, _ = _epochs_seen(violations_on=0, violations_off=0, epochs=20)
    assert all(quiet)  # before the first violation an off epoch could only count zeros


def test_the_run_turns_delays_off_where_the_off_epochs_do_as_well() -> None:
    """Violations come as often with delays off (a race out of the points' reach): once
    the evidence is in, delays are on for one epoch in four only."""
    sides, (on_v, _, off_v, _) = _epochs_seen(violations_on=1, violations_off=1)
    assert on_v + off_v >= 16
    late = sides[len(sides) // 2:]
    assert sum(late) == len(late) // 4  # the shares swapped
    assert sides[:8].count(True) == 6  # at first, on but for the control epochs


def test_a_gate_under_the_step_lock_lets_go_only_to_delay() -> None:
    """A point without a delay must not let go of the step lock (a waiting worker would
    take it: a switch at every point); a delay lets go first, so the others run."""
    let_go: list[str] = []
    with Arena() as arena:
        tables = AimTables.allocate(arena, AimParams(object_slots=64, location_slots=64,
                                                     pair_slots=64, epoch_ms=0))
        control = arena.array("control", CONTROL_LEN)
        gates = [AimedGate(tables, NoiseConfig(1.0, ("yield",), policy=AIMED), _subjects,
                           seed=1, worker=w, seq_cell=control.mv,
                           let_go=lambda: let_go.append("let go")) for w in (0, 1)]
        gates[0].observe(0, 0, "A", {"item": 7})
        gates[1].observe(2, 1, "B", {"item": 7})  # arms A in worker 0
        for _ in range(50):
            gates[0].before_point("B")  # not a target of worker 0: never lets go
        assert let_go == []
        for _ in range(50):
            gates[0].before_point("A")
        row = _row(tables, "A")
        assert 0 < row.delays < 50 and len(let_go) == row.delays  # passes kept the lock
