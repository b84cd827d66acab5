"""A bundle is data: replay, show, log and shrink import code only from where the user says.

Each attack is a bundle (or a log) naming a file outside the project whose import would
leave a marker file: the command must refuse in one line, exit 2, and the marker must not
exist. Then the allowance a user gives (``--code``) and the digest a bundle records.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.controlled.runner import ControlledOptions, run_controlled
from shmstress.controlled.strategies import PctSpec
from shmstress.core.config import RunConfig
from shmstress.core.trace import Step
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from shmstress.repro.bundle import Bundle, ExpectedViolation, from_controlled, to_json, write_bundle
from shmstress.repro.plain_bundle import (
    FailureDoc,
    LimitsDoc,
    PlainBundle,
    from_outcome,
    write_plain_bundle,
)
from shmstress.repro.plain_bundle import to_json as plain_to_json

pytestmark = pytest.mark.faults

TESTS = Path(__file__).resolve().parent
COUNTER = TESTS.parent / "examples" / "plain" / "counter.py"
RACY_CRASH = TESTS / "trackers" / "racy_crash.py"

EVIL = """\
from pathlib import Path

Path({marker!r}).write_text("imported")


def scenario():
    pass


class Evil:
    pass
"""

COMMANDS = {
    "replay": ["replay", "{bundle}"],
    "show": ["show", "{bundle}"],
    "log": ["log", "{bundle}"],
    "shrink": ["shrink", "{bundle}", "-o", "{out}/small.json", "--max-executions", "5"],
}
PLAIN_COMMANDS = ("replay", "show", "shrink")  # log reads a plain bundle's log, never replays


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """``project`` (the working directory), ``outside`` (holding evil.py, whose import
    writes ``outside/ran``) and ``downloads`` (where bundles arrive)."""
    found = {name: tmp_path / name for name in ("project", "outside", "downloads")}
    for folder in found.values():
        folder.mkdir()
    (found["outside"] / "evil.py").write_text(EVIL.format(marker=str(found["outside"] / "ran")))
    monkeypatch.chdir(found["project"])
    return found


def _tracker_bundle(tracker: str) -> dict[str, object]:
    return to_json(Bundle(
        tracker=tracker, variant="v", counts={"a": 1}, params={}, checks=None, seed=0,
        execution_seed=0, mode="controlled", strategy=PctSpec(), phase_changes=(),
        steps=(Step(0, "x"),), violation=ExpectedViolation("inv", {}, "m")))


def _plain_bundle(scenario: str) -> dict[str, object]:
    return plain_to_json(PlainBundle(
        scenario=scenario, scenario_path=scenario,
        limits=LimitsDoc(max_processes=2, max_steps=10, max_objects=10),
        strategy=PctSpec(), seed=0, execution=1, execution_seed=0, preemptions=0,
        failure=FailureDoc(end="failed", worker=0, message="m"), processes=("main",),
        steps=(Step(0, "start"),)))


def _bundle_of(kind: str, code: str) -> dict[str, object]:
    return (_tracker_bundle(f"{code}:Evil") if kind == "tracker"
            else _plain_bundle(f"{code}:scenario"))


def _write(places: dict[str, Path], text: str) -> Path:
    path = places["downloads"] / "bundle.json"
    path.write_text(text)
    return path


def _refused(command: str, bundle: Path, places: dict[str, Path],
             capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    """Run ``command`` on ``bundle``: exit 2, one line on stderr, nothing on stdout, and
    nothing of the bundle's code ran. Returns the line."""
    capsys.readouterr()
    args = [arg.format(bundle=bundle, out=places["downloads"]) for arg in COMMANDS[command]]
    assert main([*args, *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err
    assert err.startswith("shmstress: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert not (places["outside"] / "ran").exists(), "the bundle's code ran"
    return err


def _cases(commands: tuple[str, ...]) -> list[tuple[str, str]]:
    return [("tracker", command) for command in COMMANDS] + [
        ("plain", command) for command in commands]


CASES = pytest.mark.parametrize(("kind", "command"), _cases(PLAIN_COMMANDS))


@CASES
def test_code_named_by_an_absolute_path_outside_the_project_is_refused(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str], kind: str, command: str,
) -> None:
    evil = places["outside"] / "evil.py"
    bundle = _write(places, json.dumps(_bundle_of(kind, str(evil))))
    err = _refused(command, bundle, places, capsys)
    assert f"refused to import {'tracker' if kind == 'tracker' else 'scenario'} {evil}" in err
    assert f"--code {evil}" in err and str(bundle) in err


@pytest.mark.parametrize("kind", ["tracker", "plain"])
def test_pytest_stress_replay_imports_no_code_from_outside_the_project(
    places: dict[str, Path], kind: str,
) -> None:
    """``pytest --stress-replay`` checks a bundle's code as ``shmstress replay`` does (it
    imported any file a bundle named); ``--stress-code`` is its ``--code``."""
    evil = places["outside"] / "evil.py"
    bundle = _write(places, json.dumps(_bundle_of(kind, str(evil))))

    def replay(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "--stress-replay", str(bundle), *extra], cwd=places["project"],
            capture_output=True, text=True, timeout=120, check=False)

    refused = replay()
    assert refused.returncode == 1, refused.stdout + refused.stderr
    role = "tracker" if kind == "tracker" else "scenario"
    assert f"refused to import {role} {evil}" in refused.stdout
    assert f"--stress-code {evil}" in refused.stdout
    assert not (places["outside"] / "ran").exists(), "the bundle's code ran"
    allowed = replay("--stress-code", str(places["outside"]))
    assert "refused" not in allowed.stdout, allowed.stdout
    assert (places["outside"] / "ran").exists()  # the allowance is what decides


@CASES
def test_code_named_by_a_relative_path_out_through_dotdot_is_refused(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str], kind: str, command: str,
) -> None:
    bundle = _write(places, json.dumps(_bundle_of(kind, "../outside/evil.py")))
    err = _refused(command, bundle, places, capsys)
    assert f"--code {places['outside'] / 'evil.py'}" in err


@pytest.mark.parametrize("link", ["file", "folder"])
@CASES
def test_a_symlink_in_the_project_leading_out_of_it_is_refused(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str], kind: str, command: str,
    link: str,
) -> None:
    project, outside = places["project"], places["outside"]
    if link == "file":
        (project / "innocent.py").symlink_to(outside / "evil.py")
        named = "innocent.py"
    else:
        (project / "vendor").symlink_to(outside, target_is_directory=True)
        named = "vendor/evil.py"
    bundle = _write(places, json.dumps(_bundle_of(kind, named)))
    err = _refused(command, bundle, places, capsys)
    assert f"(that is {outside / 'evil.py'})" in err


@CASES
def test_a_duplicate_key_overriding_the_tracker_or_scenario_is_refused(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str], kind: str, command: str,
) -> None:
    """The first key is what a reader sees; json.loads would take the second."""
    evil = str(places["outside"] / "evil.py")
    key, shown = ("tracker", "dra") if kind == "tracker" else ("scenario", "json:dumps")
    text = json.dumps(_bundle_of(kind, evil))
    bundle = _write(places, f'{{"{key}": "{shown}", {text[1:]}')
    err = _refused(command, bundle, places, capsys)
    assert f"the key '{key}' appears twice in one object" in err
    # nothing the user can allow makes a bundle that says two things acceptable
    _refused(command, bundle, places, capsys, "--code", evil)


@pytest.mark.parametrize("command", PLAIN_COMMANDS)
@pytest.mark.parametrize("where", ["outside", "installed"])
def test_a_scenario_named_by_a_module_outside_the_project_is_refused(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, command: str, where: str,
) -> None:
    """``MODULE:FUNCTION`` calls any function of any module on sys.path (``pytest:main``
    would collect a conftest.py beside the bundle): it counts by the module's file, and a
    virtual environment inside the project is no file of the project."""
    if where == "outside":
        folder = places["outside"]
    else:
        folder = places["project"] / ".venv" / "lib" / "python3.11" / "site-packages"
        folder.mkdir(parents=True)
    (folder / "evilmod.py").write_text(EVIL.format(marker=str(places["outside"] / "ran")))
    monkeypatch.syspath_prepend(str(folder))
    bundle = _write(places, json.dumps(_plain_bundle("evilmod:scenario")))
    err = _refused(command, bundle, places, capsys)
    assert f"(that is {folder / 'evilmod.py'})" in err and "--code" in err


@pytest.mark.parametrize("command", PLAIN_COMMANDS)
def test_a_scenario_in_a_module_built_into_python_is_refused(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str], command: str,
) -> None:
    bundle = _write(places, json.dumps(_plain_bundle("os:getpid")))
    err = _refused(command, bundle, places, capsys)
    assert "module os is built into Python or has no file" in err


def test_the_scenarios_shmstress_ships_may_run_by_module_name(places: dict[str, Path]) -> None:
    from shmstress.bench.sctbench.programs import PACKAGE
    from shmstress.repro.bundle_code import (
        SHIPPED_SCENARIOS,
        CodeAllowance,
        CodeRef,
        require_trusted_code,
    )

    assert SHIPPED_SCENARIOS == PACKAGE
    code = CodeRef("scenario", f"{PACKAGE}.account:account_bad", module=f"{PACKAGE}.account")
    require_trusted_code(code, None, CodeAllowance.here())  # no refusal
    assert code.digest() is not None


def test_a_duplicate_key_anywhere_in_a_bundle_is_refused(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str],
) -> None:
    text = json.dumps(_tracker_bundle("dra")).replace(
        '"counts": {"a": 1}', '"counts": {"a": 1, "a": 2}')
    err = _refused("replay", _write(places, text), places, capsys)
    assert "the key 'a' appears twice in one object" in err


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("shape", ["array", "inside"])
def test_a_deeply_nested_bundle_is_one_line(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str], command: str, shape: str,
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    text = deep if shape == "array" else json.dumps(_tracker_bundle("dra"))[:-1] + \
        f', "extra": {deep}}}'
    err = _refused(command, _write(places, text), places, capsys)
    assert "nested too deeply" in err


def test_a_log_whose_header_names_code_outside_the_project_is_refused(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str],
) -> None:
    """``shmstress log`` loads the words of the tracker a log's header names."""
    evil = places["outside"] / "evil.py"
    log = places["downloads"] / "run.log"
    log.write_text(f'logview.py:0: I0115 15:11:04.000000       0] shmstress: Recorded run '
                   f'tracker="{evil}:Evil" variant="v" seed=0 params={{}}\n')
    capsys.readouterr()
    assert main(["log", str(log)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert f"--code {evil}" in captured.err
    assert not (places["outside"] / "ran").exists()
    assert main(["log", str(log), "--code", str(evil)]) == 0  # the user's say-so
    assert (places["outside"] / "ran").exists()


def test_code_inside_the_project_needs_no_allowance(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str],
) -> None:
    """The contrast to the refusals: a file under the working directory is imported."""
    shutil.copy(places["outside"] / "evil.py", places["project"] / "mine.py")
    bundle = _write(places, json.dumps(_tracker_bundle("mine.py:Evil")))
    main(["replay", str(bundle)])  # Evil is no tracker: refused, but only once imported
    assert (places["outside"] / "ran").exists()  # the marker evil.py's copy writes


def test_a_code_path_that_does_not_exist_is_refused(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str],
) -> None:
    bundle = _write(places, json.dumps(_tracker_bundle("dra")))
    err = _refused("replay", bundle, places, capsys, "--code", "nowhere/")
    assert "--code nowhere/: no such file or folder" in err


# -- real bundles of code outside the project ------------------------------------------------
@pytest.fixture(scope="module")
def plain_found(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a copy of the counter example outside any project, the bundle of its lost update)."""
    where = tmp_path_factory.mktemp("plain-outside")
    scenario = where / "counter.py"
    shutil.copy(COUNTER, scenario)
    spec = PlainSpec(ScenarioRef.parse(f"{scenario}:racy"))
    exploration = Exploration(PctSpec(), 3, 20)
    result = explore(spec, exploration)
    assert result.failing is not None
    bundle = from_outcome(f"{scenario}:racy", spec, exploration.strategy, 3,
                          result.failing_index, result.failing)
    return scenario, write_plain_bundle(bundle, where / "found.json")


def test_a_plain_bundle_records_its_scenario_file_by_digest(
    plain_found: tuple[Path, Path],
) -> None:
    scenario, bundle = plain_found
    data = json.loads(bundle.read_text())
    assert data["code_sha256"] == hashlib.sha256(scenario.read_bytes()).hexdigest()


def test_code_the_user_names_with_code_replays(
    places: dict[str, Path], plain_found: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    scenario, bundle = plain_found
    err = _refused("replay", bundle, places, capsys)
    assert f"--code {scenario}" in err
    assert main(["replay", str(bundle), "--code", str(scenario)]) == 1
    assert "reproduced: AssertionError" in capsys.readouterr().out
    assert main(["replay", str(bundle), "--code", str(scenario.parent)]) == 1  # a folder


def test_a_changed_scenario_file_is_named_and_allow_changed_replays_it(
    places: dict[str, Path], plain_found: tuple[Path, Path], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    original, found = plain_found
    edited = tmp_path / "edited" / "counter.py"
    edited.parent.mkdir()
    edited.write_text(original.read_text() + "# an edit after the failure was found\n")
    data = json.loads(found.read_text())
    data["scenario"] = data["scenario_path"] = f"{edited}:racy"
    bundle = _write(places, json.dumps(data))
    for command in PLAIN_COMMANDS:
        err = _refused(command, bundle, places, capsys, "--code", str(edited))
        assert f"scenario file {edited} changed since the bundle was written" in err
        assert "--allow-changed" in err
    assert main(["replay", str(bundle), "--code", str(edited), "--allow-changed"]) == 1
    assert "reproduced" in capsys.readouterr().out


def test_a_tracker_bundle_records_its_file_and_replays_only_when_allowed(
    places: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    tracker = tmp_path / "trackers-elsewhere" / "racy_crash.py"
    tracker.parent.mkdir()
    shutil.copy(RACY_CRASH, tracker)
    result = run_controlled(RunConfig(tracker=f"{tracker}:RacyCrash", variant="racy", seed=1),
                            ControlledOptions(PctSpec(), executions=1000))
    found = from_controlled(result)
    assert found is not None
    assert found.code_sha256 == hashlib.sha256(tracker.read_bytes()).hexdigest()
    bundle = write_bundle(found, places["downloads"] / "crash.json")
    err = _refused("replay", bundle, places, capsys)
    assert f"refused to import tracker {tracker}" in err
    assert main(["replay", str(bundle), "--code", str(tracker)]) == 1
    tracker.write_text(tracker.read_text() + "# edited\n")
    err = _refused("replay", bundle, places, capsys, "--code", str(tracker))
    assert f"tracker file {tracker} changed since the bundle was written" in err


def test_only_code_named_by_path_has_a_digest() -> None:
    """A built-in tracker is found by name (its bundle is written as before, byte for byte);
    a file's digest is of its bytes."""
    from shmstress.repro.bundle_code import tracker_code

    assert tracker_code("dra").digest() is None
    digest = hashlib.sha256(RACY_CRASH.read_bytes()).hexdigest()
    assert tracker_code(f"{RACY_CRASH}:RacyCrash").digest() == digest
