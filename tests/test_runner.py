"""The coordinator with real processes: exit reasons, crashes, hangs, and clean teardown."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from shmstress.core.config import RunConfig
from shmstress.core.errors import ConfigError, UnknownTrackerError, UnknownVariantError
from shmstress.core.exit_reason import ExitReason
from shmstress.core.noise import NoiseConfig
from shmstress.core.shm import live_segments
from shmstress.free import worker as free_worker
from shmstress.free.runner import run
from tests.helpers import segments_left_by_us

TRACKERS = Path(__file__).parent / "trackers" / "misbehaving.py"


@pytest.mark.parametrize(
    ("config", "error", "fragment"),
    [
        (RunConfig(tracker="dra", variant="nope"), UnknownVariantError, "no variant 'nope'"),
        (RunConfig(tracker="nope"), UnknownTrackerError, "unknown tracker 'nope'"),
        (RunConfig(tracker="dra", params={"devices-per-node": 0}), ConfigError,
         "--param devices-per-node must be >= 1"),
        (RunConfig(tracker="dra", duration=-1), ConfigError,
         "--duration must be a finite number > 0"),
        (RunConfig(tracker="dra", counts={"binder": 0}), ConfigError,
         "--workers binder=N must be >= 1"),
        (RunConfig(tracker="dra", counts={"painter": 1}), ConfigError, "no role painter"),
        (RunConfig(tracker="dra", noise=NoiseConfig(1.5)), ConfigError,
         "--noise must be a probability"),
        (RunConfig(tracker="dra", checks=("made-up",)), ConfigError, "no invariant made-up"),
    ],
)
def test_bad_configuration_is_rejected_before_anything_starts(
    config: RunConfig, error: type[Exception], fragment: str
) -> None:
    before = live_segments()
    with pytest.raises(error, match=fragment):
        run(config)
    assert not segments_left_by_us(before)


def test_a_role_that_raises_is_a_failure_with_its_traceback() -> None:
    result = run(RunConfig(tracker=f"{TRACKERS}:Crashing", duration=10, seed=1))
    assert result.exit_reason is ExitReason.VIOLATION
    assert result.exit_code == 1
    found = result.principal_violation
    assert found is not None and found.invariant == "crash" and found.elapsed_s is not None
    assert any("worker broke on purpose" in crash for crash in result.crashes)
    assert result.elapsed_s < 10


def test_hung_worker_is_killed_after_the_stop_timeout() -> None:
    """Workers that ignore the stop (code that does not go on): no progress, a failure."""
    result = run(
        RunConfig(tracker=f"{TRACKERS}:Stubborn", duration=0.2, stop_timeout=0.5,
                  drain_timeout=0.1, seed=1)
    )
    assert result.exit_reason is ExitReason.NO_PROGRESS
    assert result.exit_code == 1
    assert len(result.forced_pids) == 2
    found = result.principal_violation
    assert found is not None and found.invariant == "no-progress"
    assert "did not finish its role within 0.5 s of the stop" in found.message


def test_clean_run_reports_points_and_every_worker() -> None:
    result = run(RunConfig(tracker="dra", variant="fixed", duration=0.3, seed=2))
    assert result.exit_reason is ExitReason.DURATION_REACHED
    assert result.exit_code == 0
    assert result.violation_count == 0
    assert [w.role for w in result.workers] == ["binder", "binder", "informer", "gatherer"]
    assert all(w.pid > 0 for w in result.workers)
    assert sum(result.worker_points.values()) == result.points > 0


def test_points_budget_ends_the_run() -> None:
    result = run(RunConfig(tracker="dra", variant="fixed", duration=30, max_points=5000, seed=3))
    assert result.exit_reason is ExitReason.POINTS_REACHED
    assert result.points >= 5000
    assert result.elapsed_s < 30


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("RenderRaises", "render() raised KeyError: 4242 for fields {'value': 4242}"),
        ("FinalRaises", "check_at_rest() raised KeyError: 'claim-7'"),
    ],
)
def test_invariant_code_that_raises_mid_run_is_a_plugin_error_not_a_violation(
    name: str, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from shmstress.cli.main import main

    path = Path(__file__).parent / "trackers" / "raising_invariant.py"
    # until 50 points, however long a busy machine takes to run them (a 0.3 s run at load
    # 19 took too few steps to reach the code that raises)
    code = main(["run", "--tracker", f"{path}:{name}", "--duration", "60", "--points", "50",
                 "--seed", "1", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert fragment in err
    assert len(err.splitlines()) == 1, err


def test_an_interrupt_while_workers_start_ends_the_run_cleanly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C or SIGTERM can land after some workers are forked and before the rest."""
    import shmstress.free.runner as runner_module

    real_start = runner_module._start

    def start_two_then_interrupt(config, built, started):  # type: ignore[no-untyped-def]
        real_start(config, replace(built, workers=built.workers[:2]), started)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner_module, "_start", start_two_then_interrupt)
    result = run(RunConfig(tracker="dra", variant="fixed", duration=5, seed=1))
    assert result.exit_reason is ExitReason.INTERRUPTED
    assert len(result.workers) == 4
    assert result.crashes == ()


def test_a_worker_the_machine_never_ran_is_no_failure_of_the_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A forked worker that never reaches the harness's worker code (a machine so busy it
    did not run the process for seconds; here its first call sleeps) is the run broken
    from outside, like a stopped one: exit reason timeout and no violation. It was a "no
    progress" failure of the code before, exit 1 with a bundle of no step, and the others,
    waiting for it at their first point, were named stuck with it."""
    def never_runs(coordinator_pid: int) -> None:
        time.sleep(120)  # in the forked child only; reaped with SIGTERM

    monkeypatch.setattr(free_worker, "become_worker", never_runs)
    before = live_segments()
    result = run(RunConfig(tracker="dra", variant="fixed", seed=1, duration=0.3,
                           drain_timeout=0.5, stop_timeout=1.0, hang_timeout=60.0))
    assert result.exit_reason is ExitReason.TIMEOUT
    assert not result.violations
    assert any("never reached the worker's code" in line for line in result.crashes)
    assert not segments_left_by_us(before)
