"""shmstress import-log: a real flake's log, read, matched in the model, replayed, explained.

The seed's log (tests/data/ohly_flake.log) is the commit message's snippet as it stands:
indented, with its ``...`` line and the multi-line allocation object. The searches are
seeded, so each test runs the same executions every time; the budgets are what those
seeds need, with room (the search stops at its first violating match).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from shmstress.cli.commands import COMMANDS
from shmstress.cli.import_log import render_import
from shmstress.cli.main import main
from shmstress.controlled.log_match import ANYWHERE, Expected, Matching, Offer, Seen, Target
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import PctSpec
from shmstress.core.config import RunConfig
from shmstress.core.exit_reason import ExitCode
from shmstress.render.klog_reading import Entry, Gap, Unreadable, read_log
from shmstress.render.replay_text import render_replay
from shmstress.repro.bundle import from_controlled, load_bundle, write_bundle
from shmstress.repro.replay import Verdict, replay_bundle
from shmstress.testing.log_import import SearchOptions, import_log

DATA = Path(__file__).parent / "data"
OHLY = DATA / "ohly_flake.log"
GPU = DATA / "gpu_assignments_flake.log"
CLAIM = "testdra-all-usesallresources-hvs5d/claim-0553"
DEVICE = "testdra-all-usesallresources-hvs5d.driver/worker-5/worker-5-device-094"


def test_reads_the_seed_log_as_it_stands() -> None:
    items = read_log(OHLY.read_text()).items
    assert isinstance(items[1], Gap)
    entries = [item for item in items if isinstance(item, Entry)]
    assert [entry.number for entry in entries] == [1, 3, 4, 5, 6, 36, 37, 38, 39]
    assert {entry.thread for entry in entries} == {18778, 18066, 89109}
    observed = entries[1]
    assert observed.message == "Observed device allocation"
    assert observed.fields == {"device": DEVICE, "claim": CLAIM}
    allocation = entries[4].fields["allocation"]  # the multi-line value, lines re-joined
    assert isinstance(allocation, str) and '"device": "worker-5-device-094"' in allocation
    assert allocation.startswith("{\n") and allocation.endswith("}")
    assert not any(isinstance(item, Unreadable) for item in items)


def test_reads_klog_headers_and_keeps_what_it_cannot() -> None:
    text = ('I0115 15:11:04.407714   18778 dra_manager.go:263] "Starting X" claim="ns/c"\n'
            "    logger.go:12: I0115 15:11:04.407800] scheduler: Observed y device=3\n"
            "--- FAIL: TestSomething\n")
    items = read_log(text).items
    first, second, third = items
    assert isinstance(first, Entry) and isinstance(second, Entry)
    assert (first.thread, first.message, first.fields) == (18778, "Starting X", {"claim": "ns/c"})
    assert (second.thread, second.message, second.fields) == (0, "Observed y", {"device": 3})
    assert isinstance(third, Unreadable) and third.number == 3


def test_the_seed_log_reproduces_its_race_in_gather_unchecked() -> None:
    report = import_log(OHLY.read_text(), "dra", "gather-unchecked",
                        options=SearchOptions(executions=1500, seed=5, time_limit_s=600))
    assert report.exit_code is ExitCode.FAILURE
    assert [u.line.line for u in report.search.unmatched] == [6]  # a message the model lacks
    match = report.search.match
    assert match is not None
    assert [expected.line for expected, _ in match.matching.matched] == [
        1, 3, 4, 5, 36, 37, 38, 39]
    violation = match.outcome.principal_violation
    assert violation is not None and violation.invariant == "gather-complete"
    assert report.failure is not None and report.failure.explanation
    explanation = report.failure.explanation
    steps = ["starts GatherAllocatedState", "adds the device to allocated devices",
             "stores the claim in the assume cache", "removes the claim from in-flight",
             "checks in-flight claims"]
    places = [explanation.index(step) for step in steps]
    assert places == sorted(places), explanation
    assert f'claim "{CLAIM}" is in flight' in explanation
    assert f'device "{DEVICE}"' in explanation
    assert "shmstress/claim-" not in explanation  # the model's names are gone
    bundle = report.bundle
    assert bundle is not None and bundle.names[next(
        model for model, log in bundle.names.items() if log == CLAIM)] == CLAIM
    rows = [row for row in render_import(report, OHLY) if ": step " in row]
    for (_, seen), row in zip(match.matching.matched, rows, strict=True):
        # "line 3: step 17 gatherer #1: ...": step 17 is the bundle's 17th, numbered as shown
        number = int(row.split(": step ")[1].split()[0])
        assert bundle.steps[number - 1].worker == seen.worker, row
    replayed = replay_bundle(bundle, pin=False)
    assert replayed.verdict is Verdict.REPRODUCED
    assert f'claim "{CLAIM}" is in flight' in render_replay(replayed, Path("b.json"))


def test_the_seed_log_into_fixed_names_the_revision_check(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["import-log", str(OHLY), "--tracker", "dra", "--variant", "fixed",
                 "--seed", "5", "--executions", "300", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code in (ExitCode.NOT_REPRODUCED, ExitCode.LOG_MISMATCH), out
    assert "checks the revision, retries after a concurrent modification" in out
    assert not list(tmp_path.iterdir())  # nothing broke: no bundle


def test_an_order_no_execution_produces_is_refused_with_its_first_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A gatherer starts a second gather without finishing the first: the model cannot."""
    log = tmp_path / "impossible.log"
    log.write_text(
        "claim_tracker.go:1: I0115 15:11:04.000001   7] scheduler: "
        "Starting GatherAllocatedState\n"
        "claim_tracker.go:1: I0115 15:11:04.000002   7] scheduler: "
        "Starting GatherAllocatedState\n"
        "claim_tracker.go:2: I0115 15:11:04.000003   7] scheduler: "
        "Finished GatherAllocatedState\n")
    code = main(["import-log", str(log), "--tracker", "dra", "--variant", "gather-unchecked",
                 "--executions", "30", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == ExitCode.LOG_MISMATCH, out
    assert "first line no execution produced: line 2: Starting GatherAllocatedState" in out
    assert "gatherer #1 was about to log 'Finished GatherAllocatedState'" in out


def test_a_second_tracker_imports_its_own_log(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A free-mode failure's log of gpu-assignments, as shmstress wrote it."""
    code = main(["import-log", str(GPU), "--tracker", "gpu-assignments", "--variant",
                 "running-only", "--executions", "300", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == ExitCode.FAILURE, out
    assert "reproduced: assignment-found" in out
    assert "line 1: not matched: the tracker's words have no message 'Recorded run'" in out
    (bundle_path,) = tmp_path.glob("*.json")
    assert load_bundle(bundle_path).names
    assert main(["replay", str(bundle_path), "--no-pin"]) == ExitCode.FAILURE


def test_import_log_is_a_command() -> None:
    assert "import-log" in {command.name for command in COMMANDS}


def _seen(seq: int, worker: int, message: str, **fields: str) -> Seen:
    return Seen(seq, 0, worker, "role", message, message, fields)


def test_a_log_name_stands_for_one_model_object_and_back() -> None:
    lines = (Expected(1, 7, "Stored", {"claim": "ns/a"}),
             Expected(2, 7, "Stored", {"claim": "ns/b"}),
             Expected(3, 7, "Removed", {"claim": "ns/a"}))
    matching = Matching(Target(lines, {7: frozenset({"role"})}))
    assert matching.offer(_seen(0, 0, "Stored", claim="c1")) is Offer.MATCHES
    matching.take(_seen(0, 0, "Stored", claim="c1"))
    # ns/b is another claim than ns/a: not c1 again; and only the worker that played 7
    assert matching.offer(_seen(1, 0, "Stored", claim="c1")) is not Offer.MATCHES
    assert matching.offer(_seen(1, 1, "Stored", claim="c2")) is not Offer.MATCHES
    matching.take(_seen(1, 0, "Stored", claim="c2"))
    assert matching.offer(_seen(2, 0, "Removed", claim="c2")) is not Offer.MATCHES
    assert matching.offer(_seen(2, 0, "Removed", claim="c1")) is Offer.MATCHES


def test_a_message_of_the_log_where_it_has_none_is_off_the_log() -> None:
    lines = (Expected(1, 7, "Start", {}), Expected(2, 7, "Finish", {}),
             Expected(4, 7, "Start", {}, gap_before=True))
    matching = Matching(Target(lines, {7: frozenset({"role"})}))
    assert matching.offer(_seen(0, 0, "Finish")) is Offer.FREE  # before the first line
    matching.take(_seen(1, 0, "Start"))
    assert matching.offer(_seen(2, 0, "Start")) is Offer.OFF  # no gap between 1 and 2
    assert matching.offer(_seen(2, 0, "Other")) is Offer.FREE  # not one of its messages
    matching.take(_seen(3, 0, "Finish"))
    assert matching.offer(_seen(4, 0, "Finish")) is Offer.FREE  # the '...' before line 4
    anywhere = Matching(Target(lines, {7: frozenset({"role"})}, gaps=ANYWHERE))
    anywhere.take(_seen(1, 0, "Start"))
    assert anywhere.offer(_seen(2, 0, "Start")) is Offer.FREE


def test_show_log_and_shrink_of_a_bundle_from_a_log_speak_the_logs_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bundle ``import-log`` wrote names the log's objects (``Bundle.names``); ``replay``
    worded its failure with them, and ``show``, ``log`` and ``shrink`` spoke the model's
    ("shmstress/claim-0004", "driver.example.com/worker-0/..."), which the developer
    never saw. Any bundle with names stands in for one from a log here: a PCT failure of
    gather-unchecked, its claim and device named as a log would."""
    found = run_controlled(RunConfig(tracker="dra", variant="gather-unchecked", seed=1),
                           ControlledOptions(PctSpec(depth=3), executions=2000))
    bundle = from_controlled(found)
    assert bundle is not None
    message = found.run.violations[0].message
    model_device = message.split("never saw device ")[1].split()[0]
    model_claim = message.split("although claim ")[1].split()[0]
    names = {model_device: "gpu-of-the-log", model_claim: "ns/claim-of-the-log"}
    path = write_bundle(replace(bundle, names=names), tmp_path / "named.json")

    assert main(["show", str(path), "--width", "300"]) == 0
    shown = capsys.readouterr().out
    assert '"gpu-of-the-log"' in shown and model_device not in shown

    assert main(["log", str(path)]) == 0
    logged = capsys.readouterr().out
    assert '"ns/claim-of-the-log"' in logged and model_claim not in logged

    assert main(["shrink", str(path), "-o", str(tmp_path / "small.json"),
                 "--max-seconds", "10"]) == 0
    shrunk = capsys.readouterr().out.split("explanation:", 1)[1]
    small = load_bundle(tmp_path / "small.json")
    # a smaller scenario has other objects: the log's names stand for none of them
    same = (small.counts, small.params) == (bundle.counts, bundle.params)
    assert small.names == (names if same else {})
    assert ("of-the-log" in shrunk) == same, shrunk
