"""Campaigns: one fsynced line per trial, SIGTERM keeps what finished, --resume completes it,
and the report built from a real campaign tells racy variants from fixed ones."""

from __future__ import annotations

import io
import json
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from shmstress.campaign.grid import GridSpec, complete, derive_seed, expand
from shmstress.campaign.results_file import ResultsFile
from shmstress.campaign.runner import RESULTS_FILE, prepare, resume_spec, run_campaign, save_spec
from shmstress.cli.main import main
from shmstress.core.errors import ConfigError
from shmstress.plugin import registry
from shmstress.render.progress import CampaignProgress, RunProgress
from shmstress.reports import (
    ResultsFormatError,
    group_by_config,
    group_failures,
    load_results_file,
    parse_trial,
)
from shmstress.reports.report import build_report
from shmstress.reports.schema import SCHEMA_VERSION, decode

SHMSTRESS = [sys.executable, "-m", "shmstress"]
FIXTURE = Path(__file__).parent / "fixtures" / "reports" / "results-v1.jsonl"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ONE_WORKER_SET = ({"binder": 1, "informer": 1, "gatherer": 1},)
RACY_BUDGET_S = 60.0  # a trial ends at its violation: quiet, within a second or two; with
# 30 busy processes on the 2 CPUs one trial of 8 took longer than 15 s (the budget before)


def _spec(**fields: object) -> GridSpec:
    base = GridSpec(campaign="2026-11-22T08:00:00Z-test", seed=42)
    return replace(base, **fields)  # type: ignore[arg-type]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


# ----------------------------------------------------------------------------- the grid


def test_grid_expands_every_configuration_trial_major_with_stable_seeds() -> None:
    spec = complete(
        _spec(variants=("fixed", "gather-unchecked"), noises=(0.1, 0.0), trials=3),
        registry.load("dra"),
    )
    trials = expand(spec)
    # variants x default worker sets x (free x 2 noises + pct + random_walk) x trials
    assert len(trials) == 2 * 2 * 4 * 3
    assert len({t.trial_id for t in trials}) == len(trials)
    assert len({t.config_key for t in trials}) == 16
    assert [t.trial for t in trials[:16]] == [0] * 16  # a cut-short campaign saw every config
    assert [t.seed for t in expand(spec)] == [t.seed for t in trials]
    assert len({t.seed for t in trials}) == len(trials)
    first = trials[0]
    assert first.seed == derive_seed(42, first.config_key, 0)
    assert first.config_key == "dra/fixed b1 i1 g1 free p=0.1"  # free mode, by its CLI name
    kinds = {(t.mode, t.strategy, t.noise) for t in trials}
    assert kinds == {
        ("free", "free", 0.1), ("free", "free", 0.0),
        ("controlled", "pct", 0.0), ("controlled", "random_walk", 0.0),
    }
    controlled = [t for t in trials if t.mode == "controlled"]
    assert all(t.config_key.endswith(f"controlled/{t.strategy}") for t in controlled)
    pct = next(t for t in controlled if t.strategy == "pct")
    assert pct.controlled_options().executions == spec.executions
    assert pct.controlled_options().strategy.name == "pct"


def test_grid_survives_json_round_trip() -> None:
    spec = complete(_spec(params={"nodes": 3}, expect_clean=("fixed",)), registry.load("dra"))
    again = GridSpec.from_json(spec.to_json())
    assert again == spec
    assert expand(again) == expand(spec)


def test_bad_grid_is_rejected_before_anything_runs() -> None:
    with pytest.raises(ConfigError) as info:
        prepare(_spec(variants=("nope",), noises=(1.5,), trials=0, strategies=("warp",),
                      executions=0))
    text = str(info.value)
    assert "no variant nope" in text
    assert "noise must be in [0, 1]" in text
    assert "--trials must be >= 1" in text
    assert ("strategy must be among free, portfolio, pct, random_walk, exhaustive, dpor, "
            "got warp") in text
    assert "--executions must be >= 1" in text


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--variant", "nope"], "no variant nope"),
        (["--workers", "binder=0"], "binder count must be >= 1"),
        (["--param", "devices-per-node=0"], "--param devices-per-node must be >= 1"),
        (["--strategy", "free,warp"], "strategy must be among free, portfolio, pct"),
        (["--executions", "0"], "--executions must be >= 1"),
    ],
)
def test_campaign_config_errors_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    assert main(["campaign", "--out", str(tmp_path), "--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err
    assert not (tmp_path / RESULTS_FILE).exists()


def test_resume_refuses_a_new_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    save_spec(prepare(_spec(variants=("fixed",))), tmp_path)
    assert main(["campaign", "--out", str(tmp_path), "--resume", "--trials", "9"]) == 2
    assert "drop --trials" in capsys.readouterr().err
    assert main(["campaign", "--out", str(tmp_path / "empty"), "--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err


# ----------------------------------------------------------------------------- running


def test_campaign_writes_one_record_per_trial_with_a_bundle_per_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _spec(
        variants=("gather-unchecked", "events-unordered"), workers=ONE_WORKER_SET,
        noises=(0.1,), strategies=("free", "random_walk"), trials=2, duration=RACY_BUDGET_S,
    )
    summary = run_campaign(spec, tmp_path, progress_enabled=False)
    assert (summary.total, summary.ran, summary.bundles, summary.interrupted) == (8, 8, 8, False)
    records = _lines(tmp_path / RESULTS_FILE)
    assert len(records) == 8
    expected = {t.trial_id: t for t in expand(summary.spec)}
    for number, record in enumerate(records, start=1):
        trial = parse_trial(record, tmp_path / RESULTS_FILE, number)  # the report's own parser
        # The writer writes the schema, all of it and nothing else: decoding and encoding
        # again gives back the very line.
        assert record["schema"] == SCHEMA_VERSION
        assert msgspec.to_builtins(decode(record)) == record
        spec_of = expected.pop((trial.config_key, trial.trial or 0))
        assert trial.config.workers == tuple(spec_of.counts.items())
        assert trial.config.workers_label in trial.config_key
        assert dict(spec_of.params).items() <= dict(trial.config.params).items()
        assert trial.config.params, "every parameter the run resolved, defaults included"
        assert trial.campaign == spec.campaign
        assert trial.seed == spec_of.seed
        assert (trial.config.mode, trial.config.strategy) == (spec_of.mode, spec_of.strategy)
        assert trial.outcome == "violation", "a racy variant must be caught in every trial"
        assert trial.violation is not None and trial.violation.invariant
        assert trial.time_to_violation_s is not None and trial.elapsed_s is not None
        assert trial.time_to_violation_s <= trial.elapsed_s
        assert trial.points_to_violation is not None and trial.points is not None
        assert 0 < trial.points_to_violation <= trial.points
        assert trial.explanation is not None and "\n=> " in trial.explanation
        assert trial.log_snippet
        assert trial.bundle is not None and trial.bundle_file is not None
        assert trial.bundle_file.is_file() and not Path(trial.bundle).is_absolute()
        assert trial.replay_command == f"shmstress replay {trial.bundle}"
        assert trial.rerun_command is not None
        assert f"--seed {spec_of.seed}" in trial.rerun_command
        assert f"--variant {spec_of.variant}" in trial.rerun_command
        if spec_of.mode == "controlled":
            assert trial.config.duration is not None and trial.config.executions == 200
            assert "--mode controlled --strategy random_walk" in trial.rerun_command
    assert not expected
    # The recorded command replays, from the campaign directory, in either mode.
    monkeypatch.chdir(tmp_path)
    for mode in ("free", "controlled"):
        record = next(r for r in records if r["config"]["mode"] == mode)  # type: ignore[index]
        assert main(shlex.split(str(record["replay_command"]))[1:]) == 1


def test_report_tells_racy_from_fixed_on_a_real_campaign(tmp_path: Path) -> None:
    spec = _spec(
        variants=("gather-unchecked", "fixed"), workers=({"binder": 2},), noises=(0.1,),
        strategies=("free", "pct"), trials=3, duration=0.5,
    )
    results = run_campaign(spec, tmp_path / "c", progress_enabled=False).results
    summary = build_report([results], tmp_path / "report")
    stats = group_by_config(load_results_file(results).trials)
    racy = [s for s in stats if s.variant == "gather-unchecked"]
    fixed = [s for s in stats if s.variant == "fixed"]
    assert len(racy) == len(fixed) == 2  # free p=0.1 and controlled/pct
    assert all(s.rate > 0 for s in racy)
    assert all((s.trials, s.failures, s.rate) == (3, 0, 0.0) for s in fixed)
    page = summary.index_html.read_text(encoding="utf-8")
    assert "dra/gather-unchecked b2 i1 g1 free p=0.1" in page
    assert "dra/gather-unchecked b2 i1 g1 controlled/pct" in page
    assert "gather-unchecked: " in page  # a distinct-failure section for the racy variant
    assert "fixed: " not in page
    # Every free trial's record carries its interleaving coverage; the table shows it.
    free = [s for s in stats if s.mode == "free"]
    assert free and all(len(s.coverages) == s.trials and min(s.coverages) > 0 for s in free)
    assert all(f"{s.median_coverage:g} [{min(s.coverages)}-" in page for s in free)
    # The failure's bundle is copied next to the page, which replays it from there.
    (failure,) = group_failures(load_results_file(results).trials)
    rep = failure.representative
    assert rep.bundle is not None and rep.bundle_file is not None
    copy = summary.index_html.parent / rep.bundle
    assert copy.read_bytes() == rep.bundle_file.read_bytes()
    assert f"shmstress replay {rep.bundle}</code>" in page
    assert f"shmstress shrink {rep.bundle} -o {Path(rep.bundle).stem}.small.json" in page
    assert "shmstress run --tracker dra --variant gather-unchecked" in page  # the seeded rerun
    for png in summary.plots:
        assert png.read_bytes()[:8] == PNG_MAGIC


def test_sigterm_keeps_finished_trials_and_resume_completes(tmp_path: Path) -> None:
    out = tmp_path / "campaign"
    args = [
        *SHMSTRESS, "campaign", "--out", str(out), "--variant", "fixed", "--workers", "binder=1",
        "--noise", "0.1", "--strategy", "free", "--trials", "6", "--duration", "0.5",
        "--seed", "3", "--heartbeat", "0.2",
    ]
    results = out / RESULTS_FILE
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not results.exists() or len(results.read_bytes().splitlines()) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no trial finished within 60 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr
    assert "\r" not in stderr  # not a terminal: heartbeat lines, no progress bar
    assert "shmstress campaign: " in stderr
    kept = results.read_bytes()
    first_part = _lines(results)
    assert 2 <= len(first_part) < 6
    campaign = first_part[0]["campaign"]

    resumed = subprocess.run(
        [*SHMSTRESS, "campaign", "--out", str(out), "--resume", "--quiet"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(first_part)} trials were already recorded" in resumed.stdout
    assert results.read_bytes().startswith(kept)  # finished trials untouched
    records = _lines(results)
    assert len(records) == 6
    assert {r["campaign"] for r in records} == {campaign}
    spec = resume_spec(out)
    assert sorted((str(r["config_key"]), int(str(r["trial"]))) for r in records) == sorted(
        t.trial_id for t in expand(spec)
    )


def test_resume_drops_a_partial_last_line_and_finishes(tmp_path: Path) -> None:
    spec = prepare(
        _spec(variants=("gather-unchecked",), workers=ONE_WORKER_SET, noises=(0.1,),
              strategies=("free",), trials=2, duration=RACY_BUDGET_S)
    )
    run_campaign(replace(spec, trials=1), tmp_path, progress_enabled=False)
    results = tmp_path / RESULTS_FILE
    with results.open("ab") as handle:
        handle.write(b'{"campaign": "' + spec.campaign.encode() + b'", "trial": 1, "outc')
    save_spec(spec, tmp_path)
    summary = run_campaign(resume_spec(tmp_path), tmp_path, progress_enabled=False)
    assert summary.repaired is not None and summary.repaired.removed_bytes > 0
    assert (summary.already_done, summary.ran) == (1, 1)
    loaded = load_results_file(results)
    assert len(loaded.trials) == 2 and loaded.skipped_lines == 0
    again = run_campaign(resume_spec(tmp_path), tmp_path, progress_enabled=False)
    assert (again.already_done, again.ran, again.total) == (2, 0, 2)
    assert len(load_results_file(results).trials) == 2


def test_expect_clean_variant_that_fails_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([
        "campaign", "--out", str(tmp_path), "--quiet", "--variant", "gather-unchecked",
        "--expect-clean", "gather-unchecked", "--workers", "binder=2", "--noise", "0.1",
        "--strategy", "free", "--trials", "1", "--duration", str(RACY_BUDGET_S),
    ])
    assert code == 1
    assert "expected to be clean: dra/gather-unchecked b2 i1 g1" in capsys.readouterr().err


def test_heartbeat_is_plain_lines_when_not_a_terminal() -> None:
    stream = io.StringIO()
    earlier = {"violation": 2, "clean": 1, "error": 0}  # a resumed campaign's recorded trials
    with CampaignProgress(5, 3, earlier, heartbeat_s=0.0, stream=stream) as progress:
        progress.start_trial("dra/fixed b1 i1 g1 free/noise p=0.1 #1")
        progress.trial_done("violation")
        progress.tick(1.0, 100)
    text = stream.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("shmstress campaign: 3/5 trials done (violations: 2, errors: 0)")
    assert lines[0].endswith("; running dra/fixed b1 i1 g1 free/noise p=0.1 #1")
    # Counts cover the whole campaign; a finished trial is no longer "running".
    assert lines[-1].startswith("shmstress campaign: 4/5 trials done (violations: 3, errors: 0)")
    assert "running" not in lines[-1]
    # the rate and the time left are this invocation's: none before its first trial ends
    assert "trials/min" not in lines[0]
    assert "trials/min, about " in lines[-1] and lines[-1].endswith(" left")
    quiet = io.StringIO()
    with CampaignProgress(3, heartbeat_s=3600.0, stream=quiet) as progress:
        progress.trial_done("clean")
    assert quiet.getvalue() == ""


def test_results_file_appends_whole_lines(tmp_path: Path) -> None:
    results = ResultsFile(tmp_path / "deep" / "results.jsonl")
    record = _lines(FIXTURE)[0]  # a trial record: records() reads what the report reads
    results.append({**record, "campaign": "a", "text": "caf\u00e9\nline"})
    results.append({**record, "campaign": "b"})
    raw = results.path.read_bytes()
    assert raw.count(b"\n") == 2 and raw.endswith(b"\n")
    assert [(r["campaign"], r.get("text")) for r in results.records()] == [
        ("a", "caf\u00e9\nline"), ("b", None)]
    assert results.repair_tail() is None


# ----------------------------------------------------------------------------- report CLI


def test_report_command_renders_the_fixture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(FIXTURE), "-o", str(tmp_path / "out")]) == 0
    assert f"{len(_lines(FIXTURE))} trials, " in capsys.readouterr().out
    for name in ("failure_rate.png", "time_to_detection.png", "trend.png"):
        assert (tmp_path / "out" / name).read_bytes()[:8] == PNG_MAGIC
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    failing = {  # the fixture names free mode "noise": the page, by its one name, "free"
        str(r["config_key"]).replace(" free/noise ", " free ").replace(" free/no-noise ", " free ")
        for r in _lines(FIXTURE) if r["outcome"] == "violation"
    }
    assert failing
    for key in failing:
        assert key in page


def test_report_takes_the_directory_that_holds_the_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A campaign's --out, or pytest's --stress-report, is what a user has at hand: its
    results.jsonl is read (it was "no such results file", exit 2). A directory with none is
    still that one line."""
    held = tmp_path / "night"
    held.mkdir()
    (held / RESULTS_FILE).write_bytes(FIXTURE.read_bytes())
    assert main(["report", str(held), "-o", str(tmp_path / "out")]) == 0
    assert f"{len(_lines(FIXTURE))} trials, " in capsys.readouterr().out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", str(empty), "-o", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"no such results file: {empty / RESULTS_FILE}" in err


@pytest.mark.parametrize(
    ("content", "out", "fragment"),
    [(None, "out", "no such results file"),
     ('{"x": 1}\n', "results.jsonl", "cannot write the report directory -o")],
)
def test_report_command_errors_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, out: str,
    fragment: str,
) -> None:
    path = tmp_path / "results.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["report", str(path), "-o", str(tmp_path / out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err


def test_report_skips_lines_that_are_not_records_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"x": 1}\n{"y": 2}\n', encoding="utf-8")
    assert main(["report", str(path), "-o", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert f"{path}:1: skipped a corrupt line (missing required field" in captured.err
    assert "0 trials" in captured.out and "2 lines skipped" in captured.out


def test_campaign_help_documents_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["campaign", "--help"])
    text = capsys.readouterr().out
    for option in ("--out", "--resume", "--variant", "--workers", "--noise", "--strategy",
                   "--trials", "--duration", "--executions", "--expect-clean", "--tx",
                   "--heartbeat", "--database"):
        assert option in text


@pytest.mark.parametrize(("schema", "config", "workers"), [
    # schema 1, as the previous harness wrote a tracker's other than dra's roles
    ({}, {"binders": 0, "informers": 0, "gatherers": 0, "noise": 0.1, "strategy": "noise",
          "roles": {"kubelet": 1, "cleanup": 2}}, "roles"),
    ({"schema": 2}, {"workers": {"kubelet": 1, "cleanup": 2}, "params": {}, "noise": 0.1,
                     "strategy": "noise"}, "workers"),
])
def test_report_counts_workers_of_any_tracker(
    tmp_path: Path, schema: dict[str, object], config: dict[str, object], workers: str
) -> None:
    record: dict[str, object] = {
        **schema, "campaign": "c", "tracker": "other", "variant": "v", "outcome": "clean",
        "config_key": "other/v k1 c2 free/noise p=0.1", "config": config,
    }
    trial = parse_trial(record, tmp_path / "r.jsonl", 1)
    assert trial.config.workers == (("kubelet", 1), ("cleanup", 2))
    assert (trial.config.worker_count, trial.config.workers_label) == (3, "k1 c2")
    config[workers] = {"kubelet": "one"}
    with pytest.raises(ResultsFormatError, match=rf"r\.jsonl:1: field config\.{workers}\.kubelet"):
        parse_trial(record, tmp_path / "r.jsonl", 1)


def test_run_progress_keeps_its_heartbeat(capsys: pytest.CaptureFixture[str]) -> None:
    # `shmstress run` shares the heartbeat with campaigns; its own line is unchanged.
    with RunProgress(5.0, heartbeat_s=0.0) as progress:
        progress.update(1.2, 12345)
    assert capsys.readouterr().err == "shmstress: 1 s, 12,345 points\n"
    with RunProgress(5.0, enabled=False, heartbeat_s=0.0) as progress:
        progress.update(1.2, 12345)
    assert capsys.readouterr().err == ""
