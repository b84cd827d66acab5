"""The shmstress pytest plugin (``pytest11`` entry point ``shmstress``).

Gives any project the ``stress`` marker, the ``shmstress_run`` fixture, the
``--stress-duration``, ``--stress-seed``, ``--stress-report DIR``, ``--stress-replay
BUNDLE`` (with ``--stress-code PATH``) and ``--stress-database DIR`` options, and the ini options
``shmstress_tracker`` (the default tracker) and ``shmstress_database``. Paths in ini
options and tracker arguments are relative to pytest's rootdir, as pytest users expect
of a project setting, never to the directory pytest happened to be started in. Under
pytest-xdist, stress-marked tests take a CPU slot (see ``harness.cpu_slots``) so
``-n auto`` on a small machine never runs two stress runs on the same cores, and
they carry ``xdist_group`` so ``--dist loadgroup`` sends them all to one worker.
Trial records and repro bundles go to the controller in ``user_properties``; only the
controller (or a session without xdist) writes ``results.jsonl``, the bundles next to
it, and the report. Without ``--stress-report`` a failing run writes its bundle into
``$SHMSTRESS_OUT`` (default ``shmstress-out``), as ``shmstress run`` does. With it, a
``@concurrency_test`` test's run is a trial too (``scenario_trials``): recorded, failing
or clean, with its failing bundle kept next to the results.

Without ``--stress-*`` options a session behaves exactly as without the plugin,
except that stress-marked tests under xdist wait for their slot.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from shmstress.campaign.bundles import (
    BUNDLE_PROPERTY,
    SWIMLANE_PROPERTY,
    BundleKeeper,
    write_carried,
    write_carried_swimlane,
)
from shmstress.campaign.grid import GridSpec, new_campaign_id
from shmstress.campaign.results_file import ResultsFile
from shmstress.campaign.runner import utc_now
from shmstress.core.errors import ShmstressError
from shmstress.core.plurals import counted
from shmstress.plain.scenario import SCENARIO_ATTRIBUTE
from shmstress.pytest.campaign_items import campaign_items
from shmstress.pytest.cpu_slots import default_slots, xdist_cpu_slot, xdist_slot_directory
from shmstress.pytest.replay_items import replay_items
from shmstress.pytest.scenario_trials import ScenarioTrial
from shmstress.pytest.stress_runner import TRIAL_PROPERTY, StressOptions, StressRunner
from shmstress.repro.bundle_code import CodeAllowance
from shmstress.testing.failure_db import DEFAULT_DIRECTORY, FailureDatabase
from shmstress.testing.fixture import StressRun
from shmstress.testing.plain import CHECK_ATTRIBUTE
from shmstress.testing.trackers import tracker_spec

MARKER_LINE = (
    "stress: runs real worker processes against a shmstress tracker (slower; takes a CPU slot "
    "under pytest-xdist)"
)
XDIST_GROUP = "shmstress-stress"
RESULTS_NAME = "results.jsonl"
_WORKER_CAMPAIGN = "shmstress_campaign"


@dataclass
class StressSession:
    """Per-session state of the plugin, kept in the config's stash (never in a global)."""

    campaign: str
    duration: float | None
    seed: int | None
    report_dir: Path | None
    slots: int
    grid: GridSpec | None
    bundles: BundleKeeper
    tracker: str = "dra"
    root: Path | None = None
    database: FailureDatabase | None = None
    replays: tuple[str, ...] = ()
    code: tuple[Path, ...] = ()  # --stress-code: where a replayed bundle's code may also be
    slot_dirs: set[Path] = field(default_factory=set)

    def options(self) -> StressOptions:
        return StressOptions(self.duration, self.seed, self.report_dir is not None,
                             self.campaign, self.tracker, self.root, self.database)


_SESSION = pytest.StashKey[StressSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("shmstress", "shmstress stress runs")
    group.addoption(
        "--stress-duration", type=float, metavar="S", default=None,
        help="seconds every shmstress_run lasts, overriding the tests' own (e.g. longer nightly)",
    )
    group.addoption(
        "--stress-seed", type=int, metavar="N", default=None,
        help="seed for every shmstress_run (default: a random one, printed on failure)",
    )
    group.addoption(
        "--stress-report", metavar="DIR", default=None,
        help="append each run to DIR/results.jsonl and render the HTML report into DIR",
    )
    group.addoption(
        "--stress-slots", type=int, metavar="N", default=None,
        help="stress runs at once per host under pytest-xdist "
        f"(default: usable cores // 4, at least 1; here {default_slots()})",
    )
    group.addoption(
        "--stress-grid", metavar="JSON", default=None,
        help="run a campaign grid as one test per trial (written by `shmstress campaign --tx`)",
    )
    group.addoption(
        "--stress-replay", metavar="BUNDLE", action="append", default=[],
        help="replay a repro bundle as a test (instead of the collected tests): it fails "
        "with the explanation if the failure reproduces; repeatable",
    )
    group.addoption(
        "--stress-code", metavar="PATH", action="append", default=[],
        help="with --stress-replay: a file or folder outside the rootdir whose code a bundle "
        "may import (a bundle is data: by default only the rootdir's own files run); "
        "repeatable",
    )
    group.addoption(
        "--stress-database", metavar="DIR", default=None,
        help="failure database: failing runs' seeds, tried first next time "
        f"(default: ini shmstress_database, else {DEFAULT_DIRECTORY} in the rootdir; "
        "'none' turns it off; safe to delete)",
    )
    parser.addini(
        "shmstress_tracker",
        "default tracker of shmstress_run: an installed name or path/to/file.py:Class "
        "(relative to the rootdir)",
        default="dra",
    )
    parser.addini(
        "shmstress_database",
        f"directory of the failure database, relative to the rootdir (default "
        f"{DEFAULT_DIRECTORY}; 'none' turns it off)",
        default=DEFAULT_DIRECTORY,
    )


def _database(config: pytest.Config) -> FailureDatabase | None:
    """Where failing runs' seeds are kept: the option, else the ini value, from the rootdir;
    none while a campaign grid runs (its trials have their own seeds by design)."""
    text = config.getoption("stress_database")
    if text is None:
        text = str(config.getini("shmstress_database")).strip()
        if text.lower() in ("", "none"):
            return None
        return FailureDatabase(config.rootpath / Path(text).expanduser())
    if text.strip().lower() in ("", "none"):
        return None
    return FailureDatabase(Path(text).expanduser().absolute())  # the command line: cwd


def _marker_registered(config: pytest.Config) -> bool:
    return any(str(line).split(":", 1)[0].strip() == "stress" for line in config.getini("markers"))


def pytest_configure(config: pytest.Config) -> None:
    if not _marker_registered(config):
        config.addinivalue_line("markers", MARKER_LINE)
    duration = config.getoption("stress_duration")
    seed = config.getoption("stress_seed")
    slots = config.getoption("stress_slots")
    if duration is not None and not duration > 0:
        raise pytest.UsageError(f"--stress-duration must be > 0 seconds, got {duration:g}")
    if seed is not None and seed < 0:
        raise pytest.UsageError(f"--stress-seed must be >= 0, got {seed}")
    if slots is not None and slots < 1:
        raise pytest.UsageError(f"--stress-slots must be >= 1, got {slots}")
    grid_text = config.getoption("stress_grid")
    try:
        grid = GridSpec.from_json(grid_text) if grid_text else None
    except ShmstressError as exc:
        raise pytest.UsageError(f"--stress-grid: {exc}") from None
    for bundle in config.getoption("stress_replay"):
        if not Path(bundle).is_file():
            raise pytest.UsageError(f"--stress-replay: {bundle} does not exist")
    for trusted in config.getoption("stress_code"):
        if not Path(trusted).exists():
            raise pytest.UsageError(f"--stress-code: {trusted} does not exist")
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    campaign = (workerinput or {}).get(_WORKER_CAMPAIGN) or (
        grid.campaign if grid else new_campaign_id()
    )
    report = config.getoption("stress_report")
    report_dir = Path(report).resolve() if report else None
    state = StressSession(
        campaign=campaign,
        duration=duration,
        seed=seed,
        report_dir=report_dir,
        slots=slots or default_slots(),
        grid=grid,
        bundles=BundleKeeper(report_dir),
        tracker=tracker_spec(str(config.getini("shmstress_tracker")).strip() or "dra",
                             config.rootpath),
        root=config.rootpath,
        database=None if grid is not None else _database(config),
        replays=tuple(config.getoption("stress_replay")),
        code=tuple(Path(path).resolve() for path in config.getoption("stress_code")),
    )
    config.stash[_SESSION] = state
    if report_dir is not None and workerinput is None:
        recorder = TrialRecorder(ResultsFile(report_dir / RESULTS_NAME), report_dir)
        config.pluginmanager.register(recorder, "shmstress-trial-recorder")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: every worker records under the controller's campaign ID."""
    session = node.config.stash[_SESSION]
    node.workerinput[_WORKER_CAMPAIGN] = session.campaign
    session.slot_dirs.add(xdist_slot_directory(str(node.workerinput["testrunuid"])))


def pytest_itemcollected(item: pytest.Item) -> None:
    # Here, not in modifyitems: xdist turns the marker into a node ID suffix there, and the
    # order of modifyitems hooks is not ours to choose.
    if item.config.pluginmanager.hasplugin("xdist") and item.get_closest_marker("stress"):
        item.add_marker(pytest.mark.xdist_group(XDIST_GROUP))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Campaign trials join before ``-k``/``-m`` deselection, so those filters apply to them.

    ``--stress-replay`` replaces the collected tests with one item per bundle: asking to
    replay a bundle is asking for that alone, not for the whole suite around it.
    """
    state = config.stash[_SESSION]
    if state.replays:
        config.hook.pytest_deselected(items=list(items))
        allowance = CodeAllowance(_project(config), state.code, allow_changed=True,
                                  flag="--stress-code")
        items[:] = replay_items(session, list(state.replays), allowance)
        return
    if state.grid is not None:
        items.extend(campaign_items(session, state.grid, state.slots, state.bundles))


def _project(config: pytest.Config) -> Path:
    """The project whose files a replayed bundle may import: the rootdir ``--rootdir`` or
    an ini file set; without either, the directory pytest was started in (pytest then
    guesses the rootdir from the paths on the command line, and a bundle's is one)."""
    chosen = (config.rootpath if config.inipath is not None or config.getoption("rootdir")
              else config.invocation_params.dir)
    return chosen.resolve()


@pytest.fixture(autouse=True)
def _shmstress_cpu_slot(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under xdist, a stress-marked test runs only while it holds a CPU slot of this host."""
    if request.node.get_closest_marker("stress") is None:
        yield
        return
    with xdist_cpu_slot(request.config, request.config.stash[_SESSION].slots):
        yield


# The signature and arguments are the docstring's first paragraph: ``pytest --fixtures``
# shows a fixture's first paragraph only (all of it with -v).
@pytest.fixture
def shmstress_run(request: pytest.FixtureRequest) -> StressRun:
    """Run a tracker in free mode and fail the test, with the story, unless it went as expected:
    shmstress_run(variant=None, *, expect="clean", tracker=<ini shmstress_tracker or "dra">,
                  duration=2.0, seed=None, noise=0.1, noise_policy=None, counts=None,
                  params=None, max_points=None, checks=None) -> RunResult
    variant     the tracker's variant (None: its default)
    expect      "clean": any violation fails; "violation": a run that stays clean fails
    tracker     an installed name, "path/to/file.py:Class" (relative to the rootdir),
                or the Tracker class itself (defined at the top level of a file)
    duration    seconds the run lasts (--stress-duration overrides)
    seed        the run's seed (--stress-seed overrides; default: a stored failure's
                seed from the failure database, else a random one, printed on failure)
    noise       probability of a random yield at each point
    noise_policy  "uniform" (every point) or "aimed" (near-miss locations only; what it
                learns is saved in the database, .shmstress/); None: the harness default
    counts      workers per role, e.g. {"clerk": 3}
    params      tracker parameters, e.g. {"capacity": 8}
    max_points  stop after this many points (None: run for the duration)
    checks      names of the invariants checked (None: all of the tracker's)

    A failure carries the summary, the explanation, the replay and rerun commands and
    the bundle (in $SHMSTRESS_OUT, or next to --stress-report's results); its seed is
    stored in the failure database (.shmstress/) and tried first next session. JUnit
    XML gets seed, bundle, replay_command and invariant properties. Call it several
    times in one test for several runs.
    """
    state = request.config.stash[_SESSION]
    return StressRunner(
        state.options(), state.bundles, request.node.nodeid, request.node.user_properties, utc_now
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Under ``--stress-report``, a ``@concurrency_test`` runs its check with a keeper that
    records the run as a trial; otherwise (None) pytest calls the test as usual."""
    state = pyfuncitem.config.stash[_SESSION]
    run = getattr(pyfuncitem.obj, CHECK_ATTRIBUTE, None)
    function = getattr(pyfuncitem.obj, SCENARIO_ATTRIBUTE, None)
    if state.report_dir is None or run is None or function is None:
        return None
    __tracebackhide__ = True
    test_id = pyfuncitem.nodeid
    scenario = f"{test_id.split('::', 1)[0]}:{function.__qualname__}"
    run(keeper=ScenarioTrial(state.bundles, state.campaign, test_id, scenario,
                             pyfuncitem.user_properties, utc_now()))
    return True


class TrialRecorder:
    """Controller side of ``--stress-report``: write the bundles and records tests carried."""

    def __init__(self, results: ResultsFile, report_dir: Path) -> None:
        self.results = results
        self.report_dir = report_dir
        self.recorded = 0
        self.bundles = 0
        self.index: Path | None = None
        self.error: str | None = None

    @pytest.hookimpl(tryfirst=True)  # before junitxml, which copies every property it sees
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":  # teardown's properties include those set in setup
            return
        kept: list[tuple[str, object]] = []
        for key, value in report.user_properties:  # a trial's bundle comes before its record
            if key == BUNDLE_PROPERTY:
                write_carried(str(value), self.report_dir)
                self.bundles += 1
                continue
            if key == SWIMLANE_PROPERTY:  # a picture, far too long for a JUnit property
                write_carried_swimlane(str(value), self.report_dir)
                continue
            if key == TRIAL_PROPERTY:  # for results.jsonl; JUnit has its own properties
                self.results.append(json.loads(str(value)))
                self.recorded += 1
                continue
            kept.append((key, value))
        report.user_properties = kept

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.results.path.exists():
            return
        from shmstress.reports.report import build_report
        from shmstress.reports.results import ResultsFormatError

        try:
            self.index = build_report([self.results.path], self.report_dir).index_html
        except (OSError, ResultsFormatError) as exc:
            self.error = str(exc)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.section("shmstress")
        terminalreporter.write_line(
            f"{counted(self.recorded, 'stress run')} recorded in {self.results.path}"
            + (f", {counted(self.bundles, 'repro bundle')} next to it" if self.bundles else "")
        )
        if self.index is not None:
            terminalreporter.write_line(f"report: {self.index}")
        if self.error is not None:
            terminalreporter.write_line(f"report not rendered: {self.error}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    for directory in session.config.stash[_SESSION].slot_dirs:
        shutil.rmtree(directory, ignore_errors=True)
