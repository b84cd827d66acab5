"""Learning that persists (issue 14, item 2): aimed noise's tables saved per configuration
under the database directory and preloaded by the next run.

No timing assertions (the speed-up is ``shmstress bench --section learning``): what is
checked is what is saved and loaded, that anything unusable is a fresh start with a
note, and that deleting the directory is a fresh start.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from shmstress.bench.learning import PHASES, render_learning_bench, run_learning_bench
from shmstress.campaign.grid import GridSpec
from shmstress.campaign.runner import run_campaign
from shmstress.cli.main import main
from shmstress.core.config import RunConfig
from shmstress.core.control import _CONTROL_LEN as CONTROL_LEN
from shmstress.core.noise import AIMED, NoiseConfig
from shmstress.core.shm import Arena
from shmstress.free.aim import AimedGate, AimParams, AimTables, Learnt
from shmstress.free.learning import REMEMBERED_DELAYS, Learning, learning_key
from shmstress.free.runner import run
from shmstress.render.summary import render_summary
from shmstress.reports.schema import decode

SMALL = AimParams(object_slots=64, location_slots=64, pair_slots=64, epoch_ms=0)
CONFIG = RunConfig(tracker="dra", variant="original", seed=4, duration=10, max_points=3000,
                   noise=NoiseConfig(0.3, policy=AIMED), stop_on_first=False)


def _subjects(label: str, fields: object) -> tuple[tuple[str, int], ...]:
    assert isinstance(fields, dict)
    return tuple((key, value) for key, value in fields.items() if isinstance(value, int))


def _learnt_by_two_workers(arena: Arena) -> AimTables:
    """Tables in which worker 0 at A and worker 1 at B touched object 7 (a near miss), and
    a delay at A let B in (one productive delay)."""
    tables = AimTables.allocate(arena, SMALL)
    seq = arena.array("seq", CONTROL_LEN)  # the control block the gates read (seq, violations)
    gates = [AimedGate(tables, NoiseConfig(1.0, ("yield",), policy=AIMED), _subjects,
                       seed=1, worker=w, seq_cell=seq.mv, act=False) for w in (0, 1)]
    gates[0].observe(0, 0, "A", {"item": 7})
    gates[1].observe(2, 1, "B", {"item": 7})
    seq.mv[0] = 3
    gates[0].before_point("A")
    gates[1].observe(3, 1, "B", {"item": 7})
    gates[0].observe(4, 0, "A", {"item": 7})
    return tables


def test_saved_tables_load_into_the_next_run_as_they_were(tmp_path: Path) -> None:
    learning = Learning(tmp_path / "db")
    with Arena() as arena:
        learnt = _learnt_by_two_workers(arena).export()
    assert learnt.targets and learnt.pairs
    assert learning.save(CONFIG, learnt) is None
    assert (tmp_path / "db" / ".gitignore").is_file()  # never committed, like failures/
    loaded = learning.load(CONFIG)
    assert loaded.problem is None and loaded.learnt == learnt
    with Arena() as arena:
        fresh = AimTables.allocate(arena, SMALL)
        fresh.preload(loaded.learnt)
        stats = fresh.stats()
        # preloaded: targeted and counted as learnt, but none of its delays is this run's
        assert (stats.targeted_pairs, stats.learnt_pairs) == (len(learnt.pairs),) * 2
        assert (stats.delays, stats.productive_delays) == (0, 0)
    # a long history is kept as its yield over the last REMEMBERED_DELAYS delays
    many = Learnt(targets=((7, 40 * REMEMBERED_DELAYS, 10 * REMEMBERED_DELAYS, 1, 2),))
    assert learning.save(CONFIG, many) is None
    assert learning.load(CONFIG).learnt.targets == ((7, REMEMBERED_DELAYS,
                                                     REMEMBERED_DELAYS // 4, 1, 2),)
    # another configuration (another worker count) learns on its own
    other = replace(CONFIG, counts={"binder": 3})
    assert learning.file(other) != learning.file(CONFIG)
    assert learning.load(other).learnt == Learnt()


def test_a_violation_at_the_end_of_a_run_is_credited_to_the_delay_before_it() -> None:
    """A run that stops at its first violation ends before any worker's next point, where
    violations are credited: ``settle`` credits it after the run, so that what is saved
    says where it came from."""
    with Arena() as arena:
        tables = _learnt_by_two_workers(arena)  # worker 0 delayed at A at sequence number 3
        tables.settle([4 + SMALL.credit_window])  # too late for the delay at 3
        assert all(t[4] == 0 for t in tables.export().targets)
    with Arena() as arena:
        tables = _learnt_by_two_workers(arena)
        (a_before,) = (t for t in tables.export().targets if t[1])
        assert a_before[4] == 0
        tables.settle([5])  # right after it
        settled = tables.export()
        (a_after,) = (t for t in settled.targets if t[1])
        assert a_after[4] == 1
        tables.settle([5])  # credited once, not again
        assert tables.export() == settled


def test_the_next_run_aims_where_the_last_violation_came_from() -> None:
    """Targets whose delays were followed by a violation start fresh (full probability)
    and the others keep their back-off; when no delay was followed by one, every target
    starts fresh, as in the first run, only armed sooner."""
    kept = Learnt(targets=((11, 40, 2, 1, 0), (12, 30, 1, 2, 1)), pairs=((11, 12),))
    unaimed = Learnt(targets=((11, 40, 2, 1, 0), (12, 30, 1, 2, 0)), pairs=((11, 12),))
    with Arena() as arena:
        tables = AimTables.allocate(arena, SMALL)
        tables.preload(kept)
        assert tables.export().targets == ((11, 40, 2, 1, 0), (12, 0, 0, 2, 1))
        assert tables.export().pairs == kept.pairs
    with Arena() as arena:
        tables = AimTables.allocate(arena, SMALL)
        tables.preload(unaimed)
        assert tables.export().targets == ((11, 0, 0, 1, 0), (12, 0, 0, 2, 0))


@pytest.mark.parametrize("content", [
    "{not json",
    json.dumps({"format": "something-else"}),
    json.dumps({"format": "shmstress-learning", "version": 99}),
    json.dumps({"format": "shmstress-learning", "version": 1, "key": learning_key(CONFIG),
                "targets": [[1, 2, 3, 4]], "pairs": []}),  # before violations were saved
    json.dumps({"format": "shmstress-learning", "version": 2, "key": {"tracker": "x"}}),
    json.dumps({"format": "shmstress-learning", "version": 2, "key": learning_key(CONFIG),
                "targets": [[1, 2, "three", 4, 0]], "pairs": []}),
])
def test_an_unusable_file_is_a_fresh_start_with_a_note(tmp_path: Path, content: str) -> None:
    learning = Learning(tmp_path)
    path = learning.file(CONFIG)
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    loaded = learning.load(CONFIG)
    assert loaded.learnt == Learnt()
    assert loaded.problem is not None and str(path) in loaded.problem
    assert "started fresh" in loaded.problem


def test_a_run_starts_from_the_last_one_and_deleting_the_directory_starts_fresh(
    tmp_path: Path,
) -> None:
    learning = Learning(tmp_path / ".shmstress")
    first = run(CONFIG, learning=learning)
    assert first.aim is not None and first.aim.learnt_pairs == 0 and first.aim.targeted_pairs
    saved = learning.load(first.config)
    assert saved.problem is None and len(saved.learnt.pairs) == first.aim.targeted_pairs

    second = run(CONFIG, learning=learning)
    assert second.aim is not None
    assert second.aim.learnt_pairs == first.aim.targeted_pairs  # all of them, from point one
    assert second.aim.targeted_pairs >= second.aim.learnt_pairs
    summary = render_summary(second)
    assert (f"targeted {second.aim.targeted_pairs} near-miss pairs "
            f"({second.aim.learnt_pairs} learnt by earlier runs)") in summary

    path = learning.file(second.config)
    path.write_text("garbage", encoding="utf-8")
    corrupt = run(CONFIG, learning=learning)
    assert corrupt.aim is not None and corrupt.aim.learnt_pairs == 0
    assert f"learning: {path} unreadable" in render_summary(corrupt)
    assert learning.load(corrupt.config).problem is None  # and it saved a good one again

    for entry in sorted(learning.directory.rglob("*"), reverse=True):
        entry.rmdir() if entry.is_dir() else entry.unlink()
    learning.directory.rmdir()
    after = run(CONFIG, learning=learning)
    assert after.aim is not None and after.aim.learnt_pairs == 0
    assert "learnt by earlier runs" not in render_summary(after)


def test_the_command_line_keeps_learning_in_the_database_unless_told_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["run", "--variant", "fixed", "--noise-policy", "aimed", "--points", "1000",
            "--seed", "1", "--quiet"]
    assert main([*args, "--database", "none"]) == 0
    assert not (tmp_path / ".shmstress").exists()
    assert main(args) == 0
    assert list((tmp_path / ".shmstress" / "learning").glob("*.json"))
    assert main([*args, "--database", "elsewhere"]) == 0
    assert list((tmp_path / "elsewhere" / "learning").glob("*.json"))
    capsys.readouterr()
    assert main(["run", "--mode", "controlled", "--database", "x"]) == 2
    assert "--database" in capsys.readouterr().err


def test_an_aimed_campaign_names_its_policy_and_each_trial_starts_from_the_last(
    tmp_path: Path,
) -> None:
    spec = GridSpec(campaign="2026-11-25T02:00:00Z-lrn", seed=3, variants=("fixed",),
                    workers=({"binder": 2, "informer": 1, "gatherer": 1},), noises=(0.3,),
                    strategies=("free",), trials=2, duration=0.3, noise_policy=AIMED)
    learning = Learning(tmp_path / "db")
    summary = run_campaign(spec, tmp_path / "c", progress_enabled=False, learning=learning)
    first, second = (decode(json.loads(line)) for line in
                     summary.results.read_text(encoding="utf-8").splitlines())
    assert first.config_key == second.config_key and first.config_key.endswith(" p=0.3 aimed")
    assert first.config.noise_policy == AIMED
    assert first.learnt_pairs == 0 and first.targeted_pairs
    assert second.learnt_pairs == first.targeted_pairs  # the second trial started from the first


def test_the_bench_section_runs_first_second_and_after_delete() -> None:
    logged: list[str] = []
    (bench,) = run_learning_bench(("gather-unchecked",), trials=1, budget_s=5.0, noise=0.3,
                                  seed=1, log=logged.append)
    first, second, after = bench.phases
    assert [p.name for p in bench.phases] == list(PHASES) and logged
    assert first.learnt_pairs == (0,) and second.learnt_pairs[0] > 0
    assert after.learnt_pairs == (0,)  # the delete restored a fresh start
    text = "\n".join(render_learning_bench([bench]))
    assert "second run" in text and "speed-up of the second run over the first" in text
