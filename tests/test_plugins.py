"""The plugin API from a user's side: the example tracker loaded by path and by entry point,
caught and cleared like a built-in one; malformed trackers refused in one line with exit 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import EntryPoint, EntryPoints
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.core.config import RunConfig
from shmstress.core.control import Phase
from shmstress.core.errors import PluginError
from shmstress.core.exit_reason import ExitReason
from shmstress.core.shm import live_segments
from shmstress.free.runner import run
from shmstress.plugin import registry
from shmstress.plugin.class_check import class_problems
from shmstress.plugin.probe import probe
from shmstress.plugin.resolve import resolve
from tests.tracker_stress import (
    TRIALS,
    assert_clean_under_pct,
    assert_controlled_failure_replays,
    assert_silent_over_long_run,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "counter_tracker.py"
TICKETS = f"{EXAMPLE}:TicketTracker"
MALFORMED = Path(__file__).parent / "trackers" / "malformed.py"
BUILT_IN = ("dra", "gpu-assignments", "claim-deallocation", "device-group")


# -- the example plugin -------------------------------------------------------------------------
def test_example_passes_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--tracker", TICKETS, "--steps", "100"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"tracker {TICKETS}: ok")
    racy, locked = out.splitlines()[1:]
    assert racy.split()[0] == "racy" and "PCT found a violation in execution" in racy
    assert locked.split()[0] == "locked" and locked.endswith("5 PCT executions finished")


@pytest.mark.stress
def test_example_race_is_found_in_controlled_mode_and_replays_with_its_story(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = assert_controlled_failure_replays(
        TICKETS, "racy", {"unique-tickets": ["reads the counter", "+ 1 back", "hands out ticket",
                                             "hands out ticket"]}, tmp_path, capsys)
    assert "is not handed out" in story.splitlines()[0]


@pytest.mark.stress
def test_example_locked_variant_is_clean_under_pct() -> None:
    assert_clean_under_pct(TICKETS, "locked")


@pytest.mark.stress
def test_example_racy_variant_is_caught_in_every_trial() -> None:
    for trial in range(TRIALS):
        result = run(RunConfig(tracker=TICKETS, variant="racy", duration=15, seed=300 + trial))
        assert result.exit_reason is ExitReason.VIOLATION, f"trial {trial} missed the race"
        first = result.principal_violation
        assert first is not None and first.invariant == "unique-tickets"
        assert "was handed out twice: by clerk #" in first.message


@pytest.mark.stress
def test_example_racy_variant_loses_updates_at_rest() -> None:
    result = run(RunConfig(tracker=TICKETS, variant="racy", duration=0.5, seed=1,
                           checks=("no-lost-update",)))
    assert result.exit_reason is ExitReason.DURATION_REACHED
    [lost] = result.violations
    assert lost.at_rest and lost.invariant == "no-lost-update"
    assert lost.fields["counter"] < lost.fields["handed_out"]
    assert "increment(s) lost" in lost.message


@pytest.mark.stress
def test_example_locked_variant_is_silent_over_a_long_run() -> None:
    assert_silent_over_long_run(TICKETS, "locked")


def test_example_runs_from_the_command_line_by_path(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--tracker", TICKETS, "--variant", "racy", "--duration", "15",
                 "--seed", "2", "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    assert "unique-tickets" in out
    assert f"shmstress run --tracker {TICKETS} --variant racy --workers clerk=2" in out


def test_example_loads_through_the_entry_point_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package declares its tracker in [project.entry-points."shmstress.trackers"]."""
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))
    installed = EntryPoints([EntryPoint("tickets", "counter_tracker:TicketTracker",
                                        registry.ENTRY_POINT_GROUP)])
    monkeypatch.setattr(registry, "entry_points", lambda group: installed)
    assert registry.available() == {"tickets": "counter_tracker:TicketTracker"}
    assert registry.load("tickets").name == "tickets"
    result = run(RunConfig(tracker="tickets", variant="locked", duration=0.2, seed=1))
    assert result.exit_reason is ExitReason.DURATION_REACHED
    assert result.violation_count == 0 and result.points > 0


def test_broken_installed_plugin_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = EntryPoints([EntryPoint("broken", "no_such_module_anywhere:Tracker",
                                        registry.ENTRY_POINT_GROUP)])
    monkeypatch.setattr(registry, "entry_points", lambda group: installed)
    with pytest.raises(PluginError, match=r"^tracker broken \(no_such_module_anywhere:Tracker\) "
                       r"failed to load: ModuleNotFoundError"):
        registry.load("broken")


def test_example_type_checks_strictly() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", str(EXAMPLE)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


# -- every tracker ------------------------------------------------------------------------------
def test_every_built_in_tracker_is_installed_and_listed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert set(BUILT_IN) <= set(registry.available())
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in BUILT_IN:
        tracker = registry.load(name)
        assert f"{name}: {tracker.summary}" in out
        for variant in tracker.variants:
            assert variant in out


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_built_in_tracker_passes_the_plugin_checks(name: str) -> None:
    tracker = registry.load(name)
    assert class_problems(tracker) == []
    for variant in tracker.variants:
        config = resolve(RunConfig(tracker=name, variant=variant, seed=0), tracker)
        report = probe(tracker, variant, config.params, config.counts, steps_per_worker=50,
                       phases=(Phase.RUN, Phase.DRAIN, Phase.STOP))
        assert report.steps > 0 and report.points > report.steps / 2
        assert report.locks >= 1


# -- malformed plugins --------------------------------------------------------------------------
MALFORMED_CASES = [
    ("MissingRole", "building role 'auditor' #1 raised ValueError: no auditor here"),
    ("RaisingRender", "invariant 'positive' render() raised KeyError: 'device'"),
    ("MultiLineRender", "render() must return one line"),
    ("WritesBeforePoint", "worker #1 step wrote shared array(s) malformed.counter before its "
                          "first point ('increment')"),
    ("WritesWithoutPoint", "step wrote shared array(s) malformed.counter without any point"),
    ("UndeclaredInvariant", "reported a violation of undeclared invariant 'made-up'"),
    ("DrainedWrites", "drained() wrote shared array(s) malformed.counter"),
    ("ConstructorRaises", "building the tracker raised RuntimeError: cannot build without a GPU"),
    ("NoVariants", "variants must be a non-empty mapping"),
    ("BadStopOrder", "role 'worker': stops_after names nobody, not another role"),
    ("StopsInACircle", "roles stop after each other in a circle (ping -> pong -> ping)"),
    ("TooManyFields", "has 13 fields; at most 12 are kept"),
    ("NoInvariants", "invariants must be a non-empty sequence"),
    ("UnrecordableField", "the point or log call 'increment' has field limits={'max': 3} of "
                          "type dict"),
    ("NotATracker", "expected a subclass of shmstress.api.Tracker, got NotATracker"),
    ("ScopeRaises", "invariant 'positive' scope() raised KeyError: 'counter'"),
    ("RenderRaisesForNonZero", "invariant 'positive' render() raised IndexError: tuple index out "
                               "of range for fields {'value': 1}"),
    ("CheckAtRestRaises", "variant 'only': invariant 'positive' check_at_rest() raised "
                          "RuntimeError: lost track of the counter"),
    ("not_a_class", "expected a subclass of shmstress.api.Tracker, got function"),
    ("Missing", "malformed.py defines no 'Missing'"),
]


CONTROLLED_MODE_CASES = [  # free mode copes; `check` refuses what controlled mode cannot run
    ("WaitsInsideStep", "worker #1 step made more than 10000 points; a step must not wait"),
    ("IdlesWithoutPoint", "worker #1 step returned True without making a point (RUN phase)"),
    ("SpinsWithoutYield", "controlled PCT executions did not finish within 5000 steps, though "
                          "they could go on when every worker was given turns in order; a role "
                          "that waits for another worker without os.sched_yield() keeps PCT "
                          "running it"),
]


@pytest.mark.parametrize(
    ("command", "name", "fragment"),
    [(command, name, fragment) for command in ("run", "check") for name, fragment in
     MALFORMED_CASES] + [("check", name, fragment) for name, fragment in CONTROLLED_MODE_CASES],
)
def test_malformed_plugin_is_one_line_and_exit_2(
    command: str, name: str, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _own_segments()
    extra = ["--quiet", "--duration", "0.2"] if command == "run" else ["--steps", "50"]
    code = main([command, "--tracker", f"{MALFORMED}:{name}", *extra])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("shmstress: error: ")
    assert fragment in lines[0]
    assert captured.out == ""
    assert _own_segments() == before


def _own_segments() -> list[str]:
    """This process's segments only: other test runs on the machine create their own."""
    return [name for name in live_segments() if name.startswith(f"shmstress-{os.getpid()}-")]


def test_well_formed_control_passes() -> None:
    result = run(RunConfig(tracker=f"{MALFORMED}:Valid", duration=0.2, seed=1))
    assert result.exit_reason is ExitReason.DURATION_REACHED


def test_roles_that_yield_while_they_wait_pass_the_controlled_check(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "--tracker", f"{MALFORMED}:YieldsWhileWaiting", "--steps", "50"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("5 PCT executions finished")


def test_two_plugin_files_with_the_same_name_load_side_by_side(tmp_path: Path) -> None:
    classes = []
    for folder, variant in (("one", "first"), ("two", "second")):
        path = tmp_path / folder / "tracker.py"
        path.parent.mkdir()
        path.write_text(EXAMPLE.read_text().replace('"racy":', f'"{variant}":'))
        classes.append(registry.load(f"{path}:TicketTracker"))
    first, second = classes
    assert first.__module__ != second.__module__
    assert next(iter(first.variants)) == "first" and next(iter(second.variants)) == "second"
    assert sys.modules[first.__module__].__file__ != sys.modules[second.__module__].__file__


def test_a_step_that_never_returns_is_stopped_by_the_time_limit() -> None:
    tracker = registry.load(f"{MALFORMED}:SpinsWithoutPoints")
    with pytest.raises(PluginError, match=r"worker #1 step did not return within 0\.3 s; a "
                       "step must not wait for another worker inside itself"):
        probe(tracker, "only", {}, {"worker": 1}, time_limit_s=0.3, strict=True)


def test_free_mode_probe_stops_stepping_at_a_step_that_never_returns() -> None:
    tracker = registry.load(f"{MALFORMED}:SpinsWithoutPoints")
    report = probe(tracker, "only", {}, {"worker": 1}, time_limit_s=0.3)
    assert report.steps == 0


def test_importing_a_broken_file_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken_tracker.py"
    broken.write_text("import does_not_exist_anywhere\n")
    with pytest.raises(PluginError, match=r"importing .*broken_tracker.py failed: "
                       r"ModuleNotFoundError: No module named 'does_not_exist_anywhere'$"):
        registry.load(f"{broken}:Tracker")


def test_a_path_without_a_class_name_says_how_to_name_it() -> None:
    code = subprocess.run(
        [sys.executable, "-m", "shmstress", "run", "--tracker", str(EXAMPLE)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert code.returncode == 2
    assert code.stderr.strip() == (
        f"shmstress: error: name the tracker class too: --tracker {EXAMPLE}:ClassName"
    )


def test_malformed_plugin_from_a_real_process_exits_2_with_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "shmstress", "run", "--tracker",
         f"{MALFORMED}:MissingRole", "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "building role 'auditor' #1 raised ValueError" in done.stderr
