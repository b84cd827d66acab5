"""Recorded logs as klog text: round trip, DRA words, merge order, overflow, snippet, filter."""

from __future__ import annotations

import io
import json
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shmstress.cli.main import build_parser, main
from shmstress.core.config import RunConfig
from shmstress.core.control import ControlBlock
from shmstress.core.exit_reason import ExitReason
from shmstress.core.result import RunResult
from shmstress.core.runtime import Runtime
from shmstress.core.shm import Arena
from shmstress.core.workers import WorkerInfo
from shmstress.free.runner import run
from shmstress.plugin.words import Words
from shmstress.record.recorder import Recorder
from shmstress.render.klog import KlogFormatter, parse_line
from shmstress.render.logfilter import split_events
from shmstress.render.logview import (
    CUT,
    log_lines,
    to_log_records,
    words_of_log,
    write_log,
)
from shmstress.repro.bundle import write_bundle
from shmstress.testing.sequential import SequentialRun
from shmstress.trackers.dra.names import NO_ID, Naming
from shmstress.trackers.dra.words import DraWords
from tests.helpers import render_snippet
from tests.recorded_race import (
    CLAIM,
    DEVICE,
    GATHERER,
    bind,
    recorded_interleaving,
    recorded_seed_race,
    recorded_unordered_race,
)
from tests.test_bundle import _bundle

WORKERS = 4


class _Recorded:
    def __init__(self, ring_size: int = 64) -> None:
        self.arena = Arena()
        control = ControlBlock(self.arena, workers=WORKERS, max_violations=1, max_locks=1)
        self.runtime = Runtime(control)
        self.recorder = Recorder(self.arena, WORKERS, ring_size, tape_size=256)
        self.runtime.sink = self.recorder.record
        self.runtime.log_sink = self.recorder.log

    def result(self, tracker: str = "no-such-tracker") -> RunResult:
        return RunResult(
            config=RunConfig(tracker=tracker, variant="v", seed=0),
            exit_reason=ExitReason.DURATION_REACHED,
            violations=(),
            violation_count=0,
            elapsed_s=0.0,
            points=self.runtime.control.points,
            workers=tuple(WorkerInfo(w, "role", w, 1000 + w) for w in range(WORKERS)),
            recording=self.recorder.collect(self.runtime.control.points),
        )


@pytest.fixture
def recorded() -> Iterator[_Recorded]:
    made = _Recorded()
    try:
        yield made
    finally:
        made.recorder.release()
        made.arena.close()


def test_round_trip_record_to_text_to_fields(recorded: _Recorded) -> None:
    runtime = recorded.runtime
    runtime.become(2)
    before = time.time()
    line = sys._getframe().f_lineno + 1
    runtime.point("Observed something", count=-7, ok=True, name='a "quoted" name')
    runtime.log("a warning after it", level="W", n=3)
    runtime.point("Typed", ratio=0.75, id="0553", nothing=None, ids=(5, 3))
    after = time.time()
    result = recorded.result()
    _, first, second, third = (parse_line(text) for text in log_lines(result))  # after the header
    assert (first.file, first.line, first.level, first.pid) == ("test_logview.py", line, "I",
                                                                1002)
    assert first.logger == "shmstress"  # a tracker without words of its own
    assert first.message == "Observed something"
    assert first.fields == {"count": -7, "ok": True, "name": 'a "quoted" name'}
    stamp = time.localtime(before)
    assert (first.month, first.day) == (stamp.tm_mon, stamp.tm_mday)
    assert abs((first.hh * 3600 + first.mm * 60 + first.ss + first.micro / 1e6)
               - _seconds_of_day(before)) <= (after - before) + 1e-3
    assert (second.level, second.message, second.fields) == ("W", "a warning after it", {"n": 3})
    assert second.line == line + 1
    assert third.fields == {"ratio": 0.75, "id": "0553", "nothing": None, "ids": [5, 3]}


def _seconds_of_day(epoch: float) -> float:
    local = time.localtime(epoch)
    return local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec + epoch % 1


def test_log_calls_sit_right_after_the_point_they_follow(recorded: _Recorded) -> None:
    runtime = recorded.runtime
    for worker in (0, 1):
        runtime.become(worker)
        runtime.point(f"point of {worker}")
        runtime.log("first", w=worker)
        runtime.log("second", w=worker)
    _, *lines = [parse_line(text) for text in log_lines(recorded.result())]
    assert [(e.pid, e.message) for e in lines] == [
        (1000, "point of 0"), (1000, "first"), (1000, "second"),
        (1001, "point of 1"), (1001, "first"), (1001, "second"),
    ]


def test_dra_words_render_upstream_messages_and_names() -> None:
    words = DraWords(Naming(nodes=8, devices_per_node=100))
    assert words.event("Observed device allocation", (("claim", 553), ("device", 594),
                                                      ("old", NO_ID))) == (
        "Observed device allocation",
        (("device", "driver.example.com/worker-5/worker-5-device-094"),
         ("claim", "shmstress/claim-0553")),
    )
    assert words.event("Observed device allocation", (("claim", 553), ("device", NO_ID),
                                                      ("old", 594)))[0] == (
        "Observed device deallocation"
    )
    assert words.event("Claim stored in assume cache", (("claim", 553), ("device", 594),
                                                        ("resourceVersion", 5680)))[1] == (
        ("pod", "shmstress/my-pod-0553"), ("claim", "shmstress/claim-0553"),
        ("device", "driver.example.com/worker-5/worker-5-device-094"),
        ("resourceVersion", "5680"),
    )
    assert words.event("Attempting to bind pod to node", (("pod", 553), ("device", 594)))[1] == (
        ("pod", "shmstress/my-pod-0553"), ("node", "worker-5"),
    )
    assert words.verbosity("Starting GatherAllocatedState") == 0
    assert words.verbosity("pick pod") > words.verbosity("update claim status") > 0


def test_merged_log_follows_the_schedule_across_five_workers(tmp_path: Path) -> None:
    result = run(RunConfig(tracker="dra", variant="fixed", counts={"binder": 3}, max_points=3000,
                           duration=30, seed=5))
    assert result.recording is not None and not result.recording.ring_lost
    recording = result.recording
    path = write_log(result, tmp_path / "run.log")
    header, *events = [parse_line(e) for e in split_events(path.read_text())]
    assert header.message == "Recorded run"
    pid_of = {w.worker_id: w.pid for w in result.workers}
    log_calls = {recording.labels[r.label].text for r in recording.logs}
    points = [e for e in events if e.message not in log_calls]
    assert [e.pid for e in points] == [pid_of[s.worker] for s in recording.steps]
    assert len({e.pid for e in events}) == len(result.workers) >= 4
    assert len(events) == len(recording.records) + len(recording.logs)


def test_ring_overflow_is_reported_in_the_run_and_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "run.log"
    code = main(["run", "--variant", "fixed", "--points", "2000", "--seed", "3", "--quiet",
                 "--ring-size", "256", "--log", str(log)])
    output = capsys.readouterr().out
    assert code == 0, output
    assert "records overwritten in the workers' rings" in output
    assert f"log: {log}" in output
    header, first = (parse_line(e) for e in list(split_events(log.read_text()))[:2])
    assert header.message == "Recorded run"
    assert (first.level, first.message) == ("W", "Ring overflow: oldest records overwritten")
    assert isinstance(first.fields["lost"], int) and first.fields["lost"] > 0


def test_log_level_keeps_every_point_only_at_the_most_verbose(tmp_path: Path) -> None:
    with recorded_seed_race() as result:
        assert result.recording is not None
        everything = list(log_lines(result))
        quiet = [parse_line(e).message for e in log_lines(result, verbosity=0)]
        points, logs = len(result.recording.records), len(result.recording.logs)
    assert len(everything) == 1 + points + logs  # the header line first
    assert "pop event" not in quiet and "update claim status" not in quiet
    assert quiet[:2] == ["Recorded run", "Starting GatherAllocatedState"]
    assert "Removed in-flight claim" in quiet


def test_snippet_shows_the_gather_the_claim_and_cuts_the_rest() -> None:
    with recorded_seed_race() as result:
        snippet = render_snippet(result)
    names = Naming(2, 4)
    lines = list(split_events(snippet))
    messages = [parse_line(line).message if line != CUT else CUT for line in lines]
    assert messages == [
        "Signal claim pending allocation",  # how the claim got in flight
        CUT,  # the gatherer's other claim
        "Starting GatherAllocatedState",
        CUT,  # the informer's update of an unrelated claim
        "update claim status",
        "Claim stored in assume cache",
        "Observed device allocation",
        "Removed in-flight claim",
        "Attempting to bind pod to node",
        "Device is in flight for allocation",  # the other claim, still in flight
        "Finished GatherAllocatedState",
    ]
    assert f'claim="{names.claim(CLAIM)}"' in lines[7]
    assert f'device="{names.device(DEVICE)}"' in lines[6]
    # The gather's result is the set of devices, as upstream logs it: the claim's is missing.
    finished = parse_line(lines[-1]).fields["allocatedDevices"]
    assert isinstance(finished, str) and json.loads(finished) == [names.device(0)]


def test_snippet_shows_the_chatty_step_of_a_worker_holding_the_claim() -> None:
    with recorded_unordered_race() as result:
        snippet = render_snippet(result)
    messages = [parse_line(line).message if line != CUT else CUT
                for line in split_events(snippet)]
    assert messages == [
        "Signal claim pending allocation", "update claim status",
        "Claim stored in assume cache",
        CUT,  # the point of the pop carries no fields; the log call after it does
        "Popped event",  # verbosity 2, shown: informer #1 holds the event across the gather
        "Removed in-flight claim",
        "Starting GatherAllocatedState",
        "Finished GatherAllocatedState",
    ]


def test_logging_records_format_like_run_log() -> None:
    with recorded_seed_race() as result:
        expected = list(log_lines(result))
        records = to_log_records(result)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(KlogFormatter())
    for record in records:
        handler.handle(record)
    assert list(split_events(stream.getvalue())) == expected


def test_log_command_filters_by_claim_device_and_pid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with recorded_seed_race() as result:
        write_log(result, tmp_path / "run.log")
    names = Naming(2, 4)
    assert main(["log", str(tmp_path), "--match", f"claim={CLAIM}"]) == 0
    by_claim = [parse_line(e) for e in split_events(capsys.readouterr().out)]
    assert [e.message for e in by_claim] == [
        "Signal claim pending allocation", "get claim", "update claim status",
        "Claim stored in assume cache", "Popped event", "Observed device allocation",
        "Removed in-flight claim",
        "Attempting to bind pod to node",  # names only the claim's pod
    ]
    assert all(e.fields.get("claim", names.claim(CLAIM)) == names.claim(CLAIM)
               and e.fields.get("pod", names.pod(CLAIM)) == names.pod(CLAIM) for e in by_claim)
    device = names.device(DEVICE).split("/")[-1]
    assert main(["log", str(tmp_path), "--match", f"device={device}"]) == 0
    by_device = list(split_events(capsys.readouterr().out))
    assert {parse_line(e).message for e in by_device} == {
        "Signal claim pending allocation", "update claim status",
        "Claim stored in assume cache", "Popped event", "Observed device allocation",
    }
    assert main(["log", str(tmp_path / "run.log")]) == 0
    assert len(list(split_events(capsys.readouterr().out))) == len(list(log_lines(result)))


_HEADER = (
    'logview.py:0: I0115 15:11:04.000000       0] shmstress: Recorded run tracker="{tracker}" '
    'variant="v" seed=1 params={{}}\n'
)
_DRA_LINES = (
    'a.py:1: I0115 15:11:04.000001       7] scheduler: Observed device allocation '
    'device="d/worker-0/worker-0-device-000" claim="ns/claim-0006" '
    'previous="d/worker-1/worker-1-device-000"\n'
    'a.py:2: I0115 15:11:04.000002       8] scheduler: Claim stored in assume cache '
    'pod="ns/my-pod-0006" claim="ns/claim-0006"\n'
    'a.py:3: I0115 15:11:04.000003       8] scheduler: Attempting to bind pod to node '
    'pod="ns/my-pod-0006" node="worker-0"\n'
    'a.py:4: I0115 15:11:04.000004       8] scheduler: Attempting to bind pod to node '
    'pod="ns/my-pod-0016" node="worker-1"\n'
    'a.py:5: I0115 15:11:04.000005       7] scheduler: Observed device allocation '
    'device="d/worker-1/worker-1-device-002" claim="ns/claim-0016"\n'
)


def _filtered(capsys: pytest.CaptureFixture[str], log: Path, *args: str) -> list[int]:
    """The source lines (``a.py:N``) of the events ``shmstress log`` prints."""
    assert main(["log", str(log), *args]) == 0
    return [parse_line(e).line for e in split_events(capsys.readouterr().out)]


def test_log_filter_uses_the_words_of_the_tracker_the_log_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "run.log"
    log.write_text(_HEADER.format(tracker="dra") + _DRA_LINES)
    assert _filtered(capsys, log, "--match", "claim=6") == [1, 2, 3]  # 3: the claim's pod
    # a previous device:
    assert _filtered(capsys, log, "--match", "device=worker-1-device-000") == [1]
    assert _filtered(capsys, log, "--match", "node=worker-1") == [4]
    assert _filtered(capsys, log, "--match", "claim=ns/claim-0016", "--pid", "8") == [2, 3, 4, 5]
    assert main(["log", str(log), "--match", "device=0"]) == 2  # device-000 on two nodes
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "device '0' is ambiguous: it fits " in err
    assert "d/worker-0/worker-0-device-000, d/worker-1/worker-1-device-000;" in err
    assert main(["log", str(log), "--match", "claim=7"]) == 2
    assert "no claim named '7' in the log" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["log", str(log), "--match", "claim"])
    assert exited.value.code == 2 and "expected KIND=NAME" in capsys.readouterr().err


def test_log_filter_without_a_tracker_matches_fields_by_their_own_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "run.log"
    log.write_text(_DRA_LINES)
    assert _filtered(capsys, log, "--match", "claim=6") == [1, 2]
    assert _filtered(capsys, log, "--match", "previous=0") == [1]
    assert main(["log", str(log), "--match", "device=worker-1-device-000"]) == 2


def test_log_filter_serves_any_tracker_by_any_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "run.log"
    log.write_text(_HEADER.format(tracker="gpu-assignments")
                   + "b.py:1: I0115 15:11:04.000001       7] shmstress: Selected pod=3 card=1\n"
                   + "b.py:2: I0115 15:11:04.000002       7] shmstress: Selected pod=13 card=3\n")
    assert _filtered(capsys, log, "--match", "card=3") == [2]
    assert _filtered(capsys, log, "--match", "pod=3") == [1]  # exact, not 13


def test_log_command_reads_a_bundle_beside_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The log beside a bundle is its own: <bundle stem>.log, whose header names the bundle.
    # (It used to be any run.log in the directory, printed whoever's run it was.)
    bundle = _bundle()
    path = write_bundle(bundle, tmp_path)
    path.with_suffix(".log").write_text(
        'logview.py:0: I0115 15:11:04.000000       0] shmstress: Recorded run tracker="dra" '
        f'variant="gather-unchecked" seed=7 params={{}} bundle="{bundle.id}"\n'
        'x.py:1: I0115 15:11:04.000000       7] s: one claim="ns/claim-0001"\n'
        'x.py:2: I0115 15:11:04.000001       8] s: two claim="ns/claim-0002"\n'
    )
    assert main(["log", str(path), "--match", "claim=claim-0002"]) == 0
    captured = capsys.readouterr()
    assert captured.out == (
        'x.py:2: I0115 15:11:04.000001       8] s: two claim="ns/claim-0002"\n'
    )
    assert "replaying" not in captured.err
    assert main(["log", str(tmp_path), "--pid", "7"]) == 0  # a directory of one log
    assert "one" in capsys.readouterr().out


def test_log_command_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["log", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("shmstress: error: cannot read") and err.count("\n") == 1
    for wrong in ("12", "loud"):
        with pytest.raises(SystemExit) as refused:  # argparse: before anything starts
            main(["run", "--log-level", wrong])
        assert refused.value.code == 2
        err = capsys.readouterr().err
        assert "--log-level" in err and "main, all, or 0..9" in err and err.count("\n") == 1


def test_log_levels_have_names_for_their_ends() -> None:
    parser = build_parser()
    assert parser.parse_args(["run", "--log-level", "main"]).log_level == 0
    assert parser.parse_args(["run", "--log-level", "ALL"]).log_level == 9
    assert parser.parse_args(["replay", "b.json", "--log-level", "4"]).log_level == 4


def test_bench_measures_recording_on_against_off() -> None:
    from shmstress.bench.suite import BenchOptions, render_bench, run_bench

    report = run_bench(BenchOptions(free_seconds=0.3, sections=("free",)), log=lambda _: None)
    assert report.free_points_per_s > 0 and report.unrecorded_points_per_s > 0
    assert report.recording_ns_per_event > 0
    assert report.detections == [] and report.clean == []
    text = render_bench(report)
    assert "recording off:" in text and "ns per event" in text


def test_recorded_dra_events_render_in_the_seed_shape() -> None:
    with recorded_seed_race() as result:
        lines = [_without_time(line) for line in log_lines(result, verbosity=0)]
    names = Naming(2, 4)
    claim, device = names.claim(CLAIM), names.device(DEVICE)
    start = _site("claim_tracker.py", 'point("Starting GatherAllocatedState")')
    observed = _site("allocated_devices.py", '"Observed device allocation"')
    stored = _site("assume_cache.py", '"Claim stored in assume cache"')
    removed = _site("in_flight.py", '"Removed in-flight claim"')
    assert f"{start}: I<time>       0] scheduler: Starting GatherAllocatedState" in lines
    assert (
        f"{observed}: I<time>       0] scheduler: Observed device allocation "
        f'device="{device}" claim="{claim}"'
    ) in lines
    assert (
        f"{stored}: I<time>       0] scheduler: Claim stored in assume cache "
        f'pod="{names.pod(CLAIM)}" claim="{claim}" device="{device}" resourceVersion="9"'
    ) in lines
    assert f'{removed}: I<time>       0] scheduler: Removed in-flight claim claim="{claim}"' in (
        lines
    )


def _site(file: str, needle: str) -> str:
    """``file:line`` of the call holding ``needle`` (its first line): what the log must show."""
    dra = Path(__file__).parents[1] / "tracker" / "shmstress" / "trackers" / "dra"
    source = (dra / file).read_text().splitlines()
    (line,) = [n for n, text in enumerate(source, 1) if needle in text]
    while not any(call in source[line - 1] for call in ("held(", "point(")):
        line -= 1
    return f"{file}:{line}"


def _without_time(line: str) -> str:
    head, rest = line.split(": I", 1)
    return f"{head}: I<time>{rest[len('0115 15:11:04.407714'):]}"


def test_a_written_log_names_its_run_and_tracker_first() -> None:
    with recorded_seed_race() as result:
        header = parse_line(next(iter(log_lines(result))))
    assert (header.logger, header.message) == ("shmstress", "Recorded run")
    assert header.fields == {"tracker": "dra", "variant": "gather-unchecked", "seed": 0,
                             "params": dict(result.config.params)}
    words = words_of_log([header])
    assert isinstance(words, DraWords) and words.kinds["previous"] == "device"
    assert type(words_of_log([])) is Words


def test_single_lock_keeps_each_step_message_and_fields_at_its_own_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def signal_bind_gather(run: SequentialRun) -> None:
        run.runtime.become(GATHERER)
        run.tracker.claims.signal_claim_pending_allocation(CLAIM, DEVICE)
        bind(run)
        run.runtime.become(GATHERER)
        run.tracker.claims.gather_allocated_state()

    with recorded_interleaving("single-lock", 4096, signal_bind_gather) as result:
        events = [parse_line(e) for e in log_lines(result, verbosity=1)]
        write_log(result, tmp_path / "run.log")
    names = Naming(2, 4)
    claim = names.claim(CLAIM)
    by_message = {e.message: e for e in events}
    assert [e.message for e in events].count("Starting GatherAllocatedState") == 1
    for message, file, needle in [
        ("Signal claim pending allocation", "in_flight.py", '"Signal claim pending allocation"'),
        ("Claim stored in assume cache", "assume_cache.py", '"Claim stored in assume cache"'),
        ("Removed in-flight claim", "in_flight.py", '"Removed in-flight claim"'),
    ]:
        event = by_message[message]
        assert (f"{event.file}:{event.line}", event.fields["claim"]) == (_site(file, needle), claim)
    assert main(["log", str(tmp_path), "--match", f"claim={CLAIM}"]) == 0
    found = {parse_line(e).message for e in split_events(capsys.readouterr().out)}
    assert {"Claim stored in assume cache", "Removed in-flight claim"} <= found


def test_a_clean_run_without_a_log_does_not_warn_about_overwritten_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--variant", "fixed", "--points", "2000", "--seed", "3", "--quiet",
                 "--ring-size", "256", "--out", str(tmp_path)])
    output = capsys.readouterr().out
    assert code == 0, output
    assert "exit reason: points-reached" in output
    assert "records overwritten" not in output  # nobody reads a log that was never written
