"""Records a nightly trend can trust: provenance in every record and bundle, at-rest
failures counted alike everywhere, one name for free mode, new failures marked, and a
trend chart that reads right with one campaign and with thirty."""

from __future__ import annotations

import json
import platform
import socket
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import matplotlib.dates as mdates
import pytest

from shmstress.campaign.record import result_config_key, trial_record
from shmstress.core.config import RunConfig
from shmstress.core.provenance import code_directory, git_commit, package_version
from shmstress.free.runner import run
from shmstress.reports import detection_curves, group_by_config, load_results_file
from shmstress.reports.aggregate import group_failures, new_failures
from shmstress.reports.plots import trend_layout
from shmstress.reports.report import build_report
from shmstress.reports.schema import SCHEMA_VERSION, decode
from shmstress.repro.bundle import from_free_run, from_json, to_json

ROOT = Path(__file__).resolve().parents[1]
COUNTER = f"{ROOT / 'examples' / 'counter_tracker.py'}:TicketTracker"
CAMPAIGN = "2026-11-22T08:00:00Z-ab12"


def _head(where: Path) -> str | None:
    done = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def _at_rest_records(seeds: range) -> list[dict[str, object]]:
    """Free runs of the counter example checked at rest only: every violation is found in
    the state the workers left, after they finished."""
    records = []
    for i, seed in enumerate(seeds):
        result = run(RunConfig(tracker=COUNTER, seed=seed, duration=1.0,
                               checks=("no-lost-update",)))
        first = result.principal_violation
        assert first is not None and first.at_rest and first.elapsed_s is None, seed
        records.append(trial_record(result, campaign=CAMPAIGN, trial=i,
                                    started_at="2026-11-22T08:00:01Z", report=None,
                                    key=result_config_key(result)))
    return records


def test_records_and_bundles_carry_their_provenance() -> None:
    result = run(RunConfig(tracker=COUNTER, seed=2, duration=1.0, checks=("no-lost-update",)))
    record = trial_record(result, campaign=CAMPAIGN, trial=0, started_at="x", report=None)
    expected = {
        "schema": SCHEMA_VERSION,
        "shmstress_version": package_version(),
        "python_version": platform.python_version(),
        "host": socket.gethostname(),
        "code_commit": _head(ROOT / "examples"),  # the tracker file's checkout
    }
    assert {key: record.get(key) for key in expected} == expected
    assert expected["code_commit"] is None or len(str(expected["code_commit"])) >= 40
    decoded = decode(json.loads(json.dumps(record)))
    assert (decoded.shmstress_version, decoded.code_commit) == (
        package_version(), expected["code_commit"])

    bundle = from_free_run(result)
    assert bundle is not None and bundle.id
    data = to_json(bundle)
    assert {key: data.get(key) for key in ("shmstress_version", "python_version", "host",
                                           "code_commit")} == {
        "shmstress_version": package_version(), "python_version": platform.python_version(),
        "host": socket.gethostname(), "code_commit": expected["code_commit"]}
    assert data["format_version"] == 2
    again = from_json(json.loads(json.dumps(data)))
    assert (again.id, again.code_commit, again.host) == (bundle.id, bundle.code_commit,
                                                        bundle.host)


def test_no_commit_is_claimed_outside_a_git_checkout(tmp_path: Path) -> None:
    assert git_commit(tmp_path) is None
    assert code_directory(f"{tmp_path / 't.py'}:T") == tmp_path
    assert code_directory("dra") == Path.cwd()


def test_at_rest_failures_count_alike_in_the_table_and_both_charts(tmp_path: Path) -> None:
    records = _at_rest_records(range(1, 4))
    # ...and one as the previous release wrote it: no time, free mode called "noise"
    legacy: dict[str, Any] = json.loads(json.dumps(records[0]))
    legacy.update(time_to_violation_s=None, points_to_violation=None, trial=3,
                  config_key=str(legacy["config_key"]).replace(" free ", " free/noise "))
    legacy["config"]["strategy"] = "noise"
    assert all(r["time_to_violation_s"] is not None for r in records)  # the writer's fix
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in [*records, legacy]))

    trials = load_results_file(results).trials
    (stat,) = group_by_config(trials)  # the table and the failure-rate chart draw these
    (curve,) = detection_curves(trials)  # the detection chart draws this
    assert (stat.failures, stat.trials) == (4, 4)
    assert (curve.detections, curve.trials) == (4, 4)
    assert curve.rate == stat.rate == 1.0
    assert len(curve.times) == stat.timed_failures == 4  # every detection has a time
    assert stat.median_time_to_violation_s is not None
    assert curve.strategy == stat.drive == f"free p={stat.noise:g}"  # one name for free mode
    assert stat.config_key == str(records[0]["config_key"])  # legacy key read as the new

    page = build_report([results], tmp_path / "report").index_html.read_text()
    assert "noise:" not in page and "free/noise" not in page
    row = next(line for line in page.splitlines() if stat.config_key in line and "<td" in line)
    assert '<td class="num">4</td><td class="num">4</td>' in row and "\u2014" not in row


def _record(campaign: str, started: datetime, variant: str, outcome: str,
            invariant: str = "gather-complete") -> dict[str, object]:
    violation = {"invariant": invariant, "message": "m", "at_rest": False, "fields": {}}
    return {
        "schema": SCHEMA_VERSION, "campaign": campaign,
        "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"), "tracker": "dra",
        "variant": variant,
        "config": {"workers": {"binder": 1}, "params": {}, "noise": 0.1, "mode": "free",
                   "strategy": "free"},
        "config_key": f"dra/{variant} b1 free p=0.1", "outcome": outcome,
        "time_to_violation_s": 0.5 if outcome == "violation" else None,
        "violation": violation if outcome == "violation" else None,
        "shmstress_version": "9.9", "python_version": "3.12.1", "host": "night-1",
        "code_commit": "a" * 40,
    }


def _load(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_failures_new_since_the_previous_campaign_are_marked(tmp_path: Path) -> None:
    night = datetime(2026, 11, 22, 8, tzinfo=UTC)
    records = [
        _record("c1", night, "gather-unchecked", "violation"),
        _record("c2", night + timedelta(days=1), "gather-unchecked", "violation"),
        _record("c2", night + timedelta(days=1), "events-unordered", "violation",
                "in-flight-consistent"),
    ]
    trials = load_results_file(_load(tmp_path, records)).trials
    groups = group_failures(trials)
    new = new_failures(groups, trials)
    assert (new.latest, new.previous) == ("c2", "c1")
    assert {g.variant for g in groups if new.is_new(g)} == {"events-unordered"}
    page = build_report([tmp_path / "results.jsonl"], tmp_path / "r").index_html.read_text()
    assert page.count('<span class="new" title=') == 1
    assert "1 distinct failure of the latest campaign (c2) is new since the previous" in page
    assert "a" * 12 in page and "night-1" in page and "3.12.1" in page  # the provenance

    one = load_results_file(_load(tmp_path, records[:1])).trials
    assert not new_failures(group_failures(one), one).keys


def test_the_trend_of_one_campaign_has_no_time_axis_and_names_only_bars(
    tmp_path: Path,
) -> None:
    night = datetime(2026, 11, 22, 8, 30, tzinfo=UTC)
    records = [_record(CAMPAIGN, night, v, o) for v, o in
               (("gather-unchecked", "violation"), ("gather-unchecked", "clean"),
                ("fixed", "clean"), ("events-unordered", "violation"))]
    layout = trend_layout(load_results_file(_load(tmp_path, records)).trials)
    assert not layout.dated
    assert [s.xs for s in layout.series] == [(0.0,), (1.0,), (2.0,)]  # side by side
    assert [name for _, name in layout.ticks] == [s.variant for s in layout.series]
    assert "2026-11-22 08:30 UTC" in layout.xlabel and CAMPAIGN in layout.xlabel
    assert "bars" in layout.title and "bands" not in layout.title


def test_the_trend_of_thirty_campaigns_places_each_at_its_start(tmp_path: Path) -> None:
    night = datetime(2026, 10, 1, 2, tzinfo=UTC)
    starts = [night + timedelta(days=i) for i in range(30)]
    records = [_record(f"c{i:02}", start, variant, "violation" if i % 3 else "clean")
               for i, start in enumerate(starts) for variant in ("gather-unchecked", "fixed")]
    records.append(_record("c29", starts[-1], "events-unordered", "clean"))  # one point only
    layout = trend_layout(load_results_file(_load(tmp_path, records)).trials)
    assert layout.dated
    at = [float(x) for x in mdates.date2num(starts)]  # type: ignore[no-untyped-call]
    by_variant = {s.variant: s for s in layout.series}
    assert by_variant["gather-unchecked"].xs == pytest.approx(at)  # no sideways offset
    assert by_variant["fixed"].xs == by_variant["gather-unchecked"].xs
    assert by_variant["events-unordered"].xs == pytest.approx(at[-1:])
    assert layout.xlim[0] < at[0] and layout.xlim[1] > at[-1]
    assert layout.xlim[1] - layout.xlim[0] < 35  # the thirty days, not a padded year
    assert "bands and bars" in layout.title
    build_report([tmp_path / "results.jsonl"], tmp_path / "r")  # and it draws
