"""The pytest plugin as a user's project meets it: marker, fixture, options, failure message,
report, and pytest-xdist (-n 2) without two stress runs sharing the cores."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tests.helpers import bundles_into

pytest_plugins = ["pytester"]

RACY_BUDGET_S = 15  # racy variants are caught far within this (see test_stress.py)

USER_TESTS = f"""
import pytest

@pytest.mark.stress
def test_fixed_runs_clean(shmstress_run):
    result = shmstress_run("fixed", duration=0.3)
    assert result.violation_count == 0

@pytest.mark.stress
def test_racy_is_caught(shmstress_run):
    shmstress_run("gather-unchecked", expect="violation", duration={RACY_BUDGET_S})

@pytest.mark.stress
def test_racy_claimed_clean(shmstress_run):
    shmstress_run("gather-unchecked", duration={RACY_BUDGET_S})

@pytest.mark.stress
def test_fixed_claimed_racy(shmstress_run):
    shmstress_run("fixed", expect="violation", duration=0.3)
"""


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_marker_fixture_seed_report_and_failure_message(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    report = pytester.path / "stress-report"
    result = pytester.runpytest_subprocess(
        "--strict-markers", "-p", "no:cacheprovider", "--stress-seed", "7",
        f"--stress-report={report}",
    )
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()

    # A violation where none was expected: what broke, and every way back to it.
    racy = out[out.index("test_racy_claimed_clean"):]
    assert "shmstress: variant gather-unchecked of tracker dra broke" in racy
    assert "- gather-complete" in racy or "- no-double-allocation" in racy
    explanation = racy[racy.index("explanation:"):]
    assert "\n=> " in explanation  # the story: initial state, steps per worker, what broke
    # The bundle first (the very schedule), then the seeded rerun and the test.
    replay = racy[racy.index("replay the failing schedule: shmstress replay "):].split("\n")[0]
    shown = Path(replay.rsplit(" ", 1)[1])
    assert shown.is_absolute() and shown.is_file()  # from any directory, not pytest's alone
    assert shown.relative_to(pytester.path.resolve()).parts[:2] == ("stress-report", "bundles")
    assert f"  or in pytest: pytest --stress-replay {shown}\n" in racy
    assert "shmstress run --tracker dra --variant gather-unchecked" in racy
    assert "--seed 7" in racy
    assert "rerun this test: pytest test_user.py::test_racy_claimed_clean --stress-seed 7" in racy
    # A known race that went unnoticed is a failure too.
    assert "expected to fail but ran clean" in out

    records = _records(report / "results.jsonl")
    assert len(records) == 4
    assert {r["seed"] for r in records} == {7}
    assert len({r["campaign"] for r in records}) == 1
    assert {r["test"] for r in records} == {
        f"test_user.py::{name}" for name in (
            "test_fixed_runs_clean", "test_racy_is_caught", "test_racy_claimed_clean",
            "test_fixed_claimed_racy",
        )
    }
    by_test = {str(r["test"]).split("::")[1]: r for r in records}
    assert by_test["test_racy_is_caught"]["outcome"] == "violation"
    assert by_test["test_fixed_runs_clean"]["outcome"] == "clean"
    # Every violation's bundle sits next to results.jsonl, named relative to it.
    for name in ("test_racy_is_caught", "test_racy_claimed_clean"):
        bundle = str(by_test[name]["bundle"])
        assert (report / bundle).is_file()
        assert by_test[name]["replay_command"] == f"shmstress replay {bundle}"
        # ... and its swimlane beside it, drawn on the worker, written by the controller.
        assert by_test[name]["swimlane"] == str(Path(bundle).with_suffix(".svg"))
        assert (report / str(by_test[name]["swimlane"])).is_file()
    assert pytester.path / shown == report / str(by_test["test_racy_claimed_clean"]["bundle"])
    page = (report / "index.html").read_text(encoding="utf-8")
    assert "dra/gather-unchecked b2 i1 g1 free p=0.1" in page
    assert "shmstress replay bundles/" in page
    assert "Who did what when" in page
    assert any(f'<img src="{by_test[name]["swimlane"]}"' in page  # the failure's picture
               for name in ("test_racy_is_caught", "test_racy_claimed_clean"))
    assert f"report: {report / 'index.html'}" in out


def test_without_a_report_a_failure_writes_its_bundle_into_shmstress_out(
    pytester: pytest.Pytester,
) -> None:
    out_dir = pytester.path / "bundles-here"
    bundles_into(pytester, out_dir)
    pytester.makepyfile(
        test_racy=f"""
        import pytest

        @pytest.mark.stress
        def test_racy_claimed_clean(shmstress_run):
            shmstress_run("gather-unchecked", duration={RACY_BUDGET_S})

        @pytest.mark.stress
        def test_racy_is_caught(shmstress_run):
            shmstress_run("gather-unchecked", expect="violation", duration={RACY_BUDGET_S})
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    line = next(
        text for text in result.stdout.lines
        if text.startswith("replay the failing schedule: shmstress replay ")
    )
    bundle = pytester.path / line.rsplit(" ", 1)[1]
    assert bundle.parent == out_dir
    assert "test_racy.py-test_racy_claimed_clean" in bundle.name
    assert [p.name for p in out_dir.iterdir()] == [bundle.name]  # a passing test keeps none


def test_duration_option_overrides_and_marker_needs_no_config(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_dur="""
        import pytest

        @pytest.mark.stress
        def test_duration(shmstress_run, pytestconfig):
            result = shmstress_run("fixed", duration=60)
            assert result.config.duration == 0.25
            assert result.elapsed_s < 30
        """
    )
    result = pytester.runpytest_subprocess(
        "--strict-markers", "-p", "no:cacheprovider", "--stress-duration", "0.25"
    )
    result.assert_outcomes(passed=1)
    markers = pytester.runpytest_subprocess("--markers", "-p", "no:cacheprovider")
    markers.stdout.fnmatch_lines(["@pytest.mark.stress: *"])
    help_text = pytester.runpytest_subprocess("--help", "-p", "no:cacheprovider").stdout.str()
    for option in ("--stress-duration", "--stress-seed", "--stress-report", "--stress-slots"):
        assert option in help_text


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--stress-duration", "0"], "--stress-duration must be > 0"),
        (["--stress-seed", "-1"], "--stress-seed must be >= 0"),
        (["--stress-grid", "{}"], "--stress-grid: not a campaign grid"),
        (["--stress-replay", "no-such.json"], "--stress-replay: no-such.json does not exist"),
    ],
)
def test_bad_options_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], fragment: str
) -> None:
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert fragment in result.stderr.str()


XDIST_TESTS = f"""
import json, os, time
import pytest

def _log(name, start):
    with open(os.environ["STRESS_LOG"], "a") as log:
        log.write(json.dumps({{"test": name, "worker": os.environ.get("PYTEST_XDIST_WORKER"),
                               "start": start, "end": time.time()}}) + "\\n")

@pytest.mark.stress
@pytest.mark.parametrize("n", range(4))
def test_fixed(shmstress_run, n):
    start = time.time()
    shmstress_run("fixed", duration=0.4)
    _log(f"fixed-{{n}}", start)

@pytest.mark.stress
def test_racy_claimed_clean(shmstress_run):
    start = time.time()
    try:
        shmstress_run("gather-unchecked", duration={RACY_BUDGET_S})
    finally:
        _log("racy", start)

def test_plain_tests_still_spread():
    time.sleep(0.3)
"""


def _overlaps(entries: list[dict[str, object]]) -> list[tuple[str, str]]:
    spans = sorted((float(str(e["start"])), float(str(e["end"])), str(e["test"])) for e in entries)
    return [
        (a[2], b[2]) for a, b in itertools.pairwise(spans) if b[0] < a[1]
    ]


def test_under_xdist_stress_runs_take_turns_and_records_merge(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_x=XDIST_TESTS)
    log = pytester.path / "stress-log.jsonl"
    monkeypatch.setenv("STRESS_LOG", str(log))
    report = pytester.path / "report"
    result = pytester.runpytest_subprocess(
        "-n", "2", "--stress-slots", "1", "-p", "no:cacheprovider", "--stress-seed", "11",
        f"--stress-report={report}",
    )
    result.assert_outcomes(passed=5, failed=1)
    out = result.stdout.str()
    assert "shmstress: variant gather-unchecked of tracker dra broke" in out
    assert "rerun this test: pytest test_x.py::test_racy_claimed_clean --stress-seed 11" in out

    entries = _records(log)
    assert len(entries) == 5
    assert {e["worker"] for e in entries} <= {"gw0", "gw1"}  # xdist chose who ran what
    assert _overlaps(entries) == []  # ... but never two at once on these cores

    # Every run's record reached the controller, which alone wrote them and the bundle.
    records = _records(report / "results.jsonl")
    assert sorted(str(r["test"]) for r in records) == sorted(
        [f"test_x.py::test_fixed[{n}]" for n in range(4)] + ["test_x.py::test_racy_claimed_clean"]
    )
    assert {r["runner"] for r in records} <= {"gw0", "gw1"}
    assert len({r["campaign"] for r in records}) == 1  # the controller's campaign ID
    (racy,) = [r for r in records if r["outcome"] == "violation"]
    assert (report / str(racy["bundle"])).is_file()
    assert (report / "index.html").is_file()


def test_stress_tests_carry_the_xdist_group(pytester: pytest.Pytester) -> None:
    # With --dist loadgroup, xdist sends one group to one worker. (pytest 9.2 with xdist 3.8
    # drops the grouping: pytest-xdist issue #1386; the CPU slot above is what keeps runs
    # apart either way, so only the marker, which is ours to set, is checked here.)
    pytester.makepyfile(
        test_g="""
        import pytest

        def _group(request):
            mark = request.node.get_closest_marker("xdist_group")
            return mark.args[0] if mark else None

        @pytest.mark.stress
        def test_stress(request):
            assert _group(request) == "shmstress-stress"

        def test_plain(request):
            assert _group(request) is None
        """
    )
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_only_a_real_xdist_worker_takes_a_cpu_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    # A pytest started by a test inherits the xdist worker's environment; if it took a slot
    # of the outer run it would wait for the very test that started it.
    from types import SimpleNamespace

    from shmstress.pytest.cpu_slots import xdist_testrunuid

    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "outer-run")
    assert xdist_testrunuid(SimpleNamespace()) is None
    worker = SimpleNamespace(workerinput={"testrunuid": "this-run", "workerid": "gw0"})
    assert xdist_testrunuid(worker) == "this-run"
