"""Evidence is never overwritten: every failure keeps its own bundle and its own log.

Several failing runs into one ``--out`` (a rerun with the same seed among them) leave one
bundle and one log per run, each log's header naming its bundle, and ``shmstress log
BUNDLE`` prints that bundle's own log, never another run's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.render.logfilter import parse_events
from shmstress.render.logview import log_header
from tests.helpers import bundles_into

pytest_plugins = ["pytester"]

RACY_BUDGET_S = 15  # racy variants are caught far within this (see test_stress.py)

CONTROLLED = ["run", "--mode", "controlled", "--strategy", "pct", "--depth", "3",
              "--executions", "500", "--variant", "gather-unchecked"]


def _run(out: Path, seed: int, capsys: pytest.CaptureFixture[str]) -> Path:
    """One failing run into ``out``; the bundle it names."""
    assert main([*CONTROLLED, "--seed", str(seed), "--out", str(out)]) == 1
    text = capsys.readouterr().out
    (line,) = [line for line in text.splitlines() if line.strip().startswith("repro bundle: ")]
    return Path(line.split("repro bundle: ", 1)[1].rsplit(" (", 1)[0])


def _header(log: Path) -> dict[str, object]:
    header = log_header(e.parsed for e in parse_events(log.read_text()))
    assert header is not None, log
    return dict(header)


def test_failing_runs_into_one_out_keep_every_bundle_and_its_own_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    bundles = [_run(out, 3, capsys), _run(out, 4, capsys), _run(out, 3, capsys)]  # a rerun
    assert len(set(bundles)) == 3, bundles
    assert sorted(out.glob("*.json")) == sorted(bundles)
    assert sorted(out.glob("*.log")) == sorted(b.with_suffix(".log") for b in bundles)
    contents = {b: b.read_text() for b in bundles}
    for bundle in bundles:
        data = json.loads(contents[bundle])
        header = _header(bundle.with_suffix(".log"))
        assert (header["seed"], header["variant"], header["bundle"]) == (
            data["seed"], data["variant"], data["id"])
        assert data["id"] in bundle.name
        # `shmstress log BUNDLE` prints that bundle's own log, word for word
        assert main(["log", str(bundle)]) == 0
        captured = capsys.readouterr()
        assert captured.out == bundle.with_suffix(".log").read_text()
        assert "replaying" not in captured.err
    assert {b: b.read_text() for b in bundles} == contents  # nothing rewritten

    # A directory of several logs is ambiguous: it is refused, not guessed at.
    assert main(["log", str(out)]) == 2
    assert "holds 3 run logs" in capsys.readouterr().err


def test_a_log_that_is_not_the_bundles_own_is_not_printed_as_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    first, second = _run(out, 3, capsys), _run(out, 4, capsys)
    first_log = first.with_suffix(".log")
    first_log.write_text(second.with_suffix(".log").read_text())  # another run's log
    assert main(["log", str(first)]) == 0
    captured = capsys.readouterr()
    assert "is not this bundle's log" in captured.err and "replaying" in captured.err
    replayed = log_header(e.parsed for e in parse_events(captured.out))
    assert replayed is not None and replayed["seed"] == 3
    assert replayed["bundle"] == json.loads(first.read_text())["id"]


def test_a_legacy_run_log_is_used_only_when_its_header_names_the_bundles_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    bundle = _run(out, 3, capsys)
    own = bundle.with_suffix(".log")
    legacy = out / "run.log"
    own.rename(legacy)
    data = json.loads(bundle.read_text())
    del data["id"]  # a bundle of a release before ids
    bundle.write_text(json.dumps(data))
    text = legacy.read_text()
    legacy.write_text(text.replace(" bundle=", " previous_bundle="))
    assert main(["log", str(bundle)]) == 0
    captured = capsys.readouterr()
    assert "replaying" not in captured.err
    assert captured.out == legacy.read_text()


def test_a_stress_seed_rerun_keeps_the_bundle_of_the_failure_it_reruns(
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
        """
    )
    shown = []
    for _ in range(2):  # the failure, then its rerun with the seed it printed
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--stress-seed", "7")
        result.assert_outcomes(failed=1)
        line = next(text for text in result.stdout.lines
                    if text.startswith("replay the failing schedule: shmstress replay "))
        shown.append(pytester.path / line.rsplit(" ", 1)[1])
        if len(shown) == 1:
            first_text = shown[0].read_text()
    first, rerun = shown
    assert first != rerun and first.parent == rerun.parent == out_dir
    assert sorted(out_dir.iterdir()) == sorted(shown)
    assert first.read_text() == first_text  # the rerun wrote beside it, never over it
    for bundle in shown:
        assert "test_racy.py-test_racy_claimed_clean" in bundle.name
        assert json.loads(bundle.read_text())["id"] in bundle.name


def test_a_plain_code_rerun_keeps_the_first_bundle_and_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = str(Path(__file__).resolve().parents[1] / "examples" / "plain" / "counter.py")
    out = tmp_path / "out"
    for _ in range(2):  # the same seed twice: the same failure, two pieces of evidence
        assert main(["test", f"{scenario}:racy", "--seed", "2", "--out", str(out)]) == 1
    capsys.readouterr()
    first, second = sorted(out.glob("*.json"), key=lambda p: len(p.name))
    assert second.name == f"{first.stem}-2.json"
    assert sorted(out.glob("*.log")) == sorted([first.with_suffix(".log"),
                                                second.with_suffix(".log")])
    assert main(["log", str(second)]) == 0
    assert capsys.readouterr().out == second.with_suffix(".log").read_text()
