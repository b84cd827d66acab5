"""What the plugin API promises beyond the shape of a class: stop order, hooks for state
the harness does not own, ghost state, checks across parameters, named scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest

from shmstress.api import Phase
from shmstress.cli.main import main
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import PctSpec, RandomWalkSpec
from shmstress.core.config import RunConfig
from shmstress.core.errors import ConfigError
from shmstress.free.runner import run
from shmstress.plugin import registry
from shmstress.plugin.resolve import resolve
from shmstress.testing.sequential import SequentialRun
from tests.trackers.hooks import HOOKS_FILE, Ordered

TRACKERS = Path(__file__).parent / "trackers"
HOOKS = TRACKERS / "hooks.py"


def test_a_role_sees_drain_until_the_roles_it_stops_after_have_finished() -> None:
    with SequentialRun.build(Ordered, "only", counts={"producer": 2}) as run_:
        tracker = run_.tracker
        assert isinstance(tracker, Ordered)
        consumer = next(w.worker_id for w in run_.workers if w.role == "consumer")
        producers = [w.worker_id for w in run_.workers if w.role == "producer"]
        run_.control.set_phase(Phase.DRAIN)
        run_.control.set_phase(Phase.STOP)
        assert run_.step(consumer, Phase.STOP)  # handed DRAIN: goes on
        assert tracker.seen.np.tolist() == [0, 1, 0]
        while run_.step(producers[0], Phase.STOP):
            pass
        assert run_.step(consumer, Phase.STOP)  # one producer is still at work
        while run_.step(producers[1], Phase.STOP):
            pass
        assert not run_.step(consumer, Phase.STOP)  # now STOP: it finishes
        assert tracker.seen.np.tolist() == [0, 2, 1]
        assert tracker.done_at.mv[0] == 2 * Ordered.steps


def test_stop_order_holds_in_free_and_controlled_runs() -> None:
    free = run(RunConfig(tracker=f"{HOOKS}:Ordered", duration=0.2, seed=1))
    assert free.violation_count == 0 and free.exit_code == 0
    controlled = run_controlled(
        RunConfig(tracker=f"{HOOKS}:Ordered", seed=1, max_points=20),
        ControlledOptions(RandomWalkSpec(), executions=20, run_steps=20))
    assert controlled.ends == {"finished": 20}


def test_reset_runs_before_each_controlled_execution_and_teardown_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = tmp_path / "hooks.txt"
    monkeypatch.setenv(HOOKS_FILE, str(notes))
    run_controlled(RunConfig(tracker=f"{HOOKS}:Hooked", seed=2, max_points=20),
                   ControlledOptions(PctSpec(), executions=7, run_steps=20))
    calls = [line.split()[0] for line in notes.read_text().splitlines()]
    assert calls == ["reset"] * 7 + ["teardown"]
    notes.unlink()
    run(RunConfig(tracker=f"{HOOKS}:Hooked", duration=0.2, seed=2))
    assert [line.split()[0] for line in notes.read_text().splitlines()] == ["teardown"]


def test_a_hook_that_raises_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--tracker", f"{HOOKS}:ResetRaises", "--mode", "controlled",
                 "--executions", "2", "--points", "10"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.endswith("reset() raised RuntimeError: the library's segment is gone")
    assert len(err.splitlines()) == 1


def test_a_ghost_array_may_be_written_before_the_first_point() -> None:
    assert main(["check", "--tracker", f"{TRACKERS / 'malformed.py'}:WritesGhostBeforePoint",
                 "--steps", "20", "--executions", "0"]) == 0


def test_parameters_that_do_not_go_together_are_refused_before_anything_runs() -> None:
    tracker = registry.load("claim-deallocation")
    with pytest.raises(ConfigError, match=r"claims x pods-per-claim must be <= 62, got 80"):
        resolve(RunConfig(tracker="claim-deallocation",
                          params={"claims": 40, "pods-per-claim": 2}), tracker)


def test_a_named_scenario_sets_counts_and_parameters_and_the_command_line_overrides_it(
) -> None:
    tracker = registry.load("dra")
    config = resolve(RunConfig(tracker="dra", scenario="seed-race", counts={"informer": 2}),
                     tracker)
    assert config.counts == {"binder": 1, "informer": 2, "gatherer": 1}
    assert config.params["devices-per-node"] == 2 and config.params["nodes"] == 1
    with pytest.raises(ConfigError, match=r"has no scenario 'nope'; its scenarios: one-device"):
        resolve(RunConfig(tracker="dra", scenario="nope"), tracker)
