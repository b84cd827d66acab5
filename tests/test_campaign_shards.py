"""A campaign cut into shards (``--shard I/N``, one CI job each) and merged back gives the
trials, seeds and counts of the campaign run whole; bad shard specs and records that do
not merge cleanly are refused in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from shmstress.campaign.grid import GridSpec, every_trial
from shmstress.campaign.runner import RESULTS_FILE, STATE_FILE, resume_spec, run_campaign
from shmstress.cli.campaign import _grid_from_args
from shmstress.cli.main import build_parser, main
from shmstress.core.shard import WHOLE, Shard

SHARDS = 4
ONE_WORKER_SET = ({"binder": 1, "informer": 1, "gatherer": 1},)
GRID = GridSpec(
    campaign="nightly-shards-test", seed=7, variants=("fixed", "gather-unchecked"),
    workers=ONE_WORKER_SET, noises=(0.0,), strategies=("free", "random_walk"), trials=2,
    duration=0.3, executions=30,
)  # 2 variants x (free, random_walk) x 2 trials: 8 trials, a few seconds each under load


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _trials(records: list[dict[str, object]]) -> Counter[tuple[object, ...]]:
    """What must not depend on sharding: each trial, with its seed and configuration."""
    return Counter((r["campaign"], r["config_key"], r["trial"], r["seed"], r["variant"],
                    json.dumps(r["config"], sort_keys=True)) for r in records)


def _controlled(records: list[dict[str, object]]) -> dict[tuple[object, ...], object]:
    """Controlled trials' outcomes: a seed decides them, wherever the trial ran."""
    return {(r["config_key"], r["trial"]): (r["outcome"], r["points_to_violation"])
            for r in records if r["config"]["mode"] == "controlled"}  # type: ignore[index]


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The grid run whole in ``whole/``, and shard by shard in ``shard-I/``."""
    root = tmp_path_factory.mktemp("shards")
    run_campaign(GRID, root / "whole", progress_enabled=False)
    for index in range(1, SHARDS + 1):
        summary = run_campaign(replace(GRID, shard=Shard(index, SHARDS)),
                               root / f"shard-{index}", progress_enabled=False)
        assert summary.ran == summary.total > 0  # 8 trials over 4 shards: 2 each
    return root


def _shards(root: Path) -> list[str]:
    return [str(root / f"shard-{index}") for index in range(1, SHARDS + 1)]


def test_merged_shards_give_the_trials_seeds_and_counts_of_the_whole_campaign(
    campaigns: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = _records(campaigns / "whole" / RESULTS_FILE)
    assert len(whole) == len(every_trial(GRID)) == 8
    shard_trials = [_trials(_records(campaigns / f"shard-{i}" / RESULTS_FILE))
                    for i in range(1, SHARDS + 1)]
    assert all(shard_trials), "every shard ran its share"
    assert sum(shard_trials, Counter()) == _trials(whole), "the shards split the grid exactly"

    merged = campaigns / "merged"
    assert main(["merge", str(merged), *_shards(campaigns)]) == 0
    out = capsys.readouterr().out
    assert f"campaign {GRID.campaign}: 8/8 trials" in out
    records = _records(merged / RESULTS_FILE)
    assert _trials(records) == _trials(whole)
    assert (Counter(r["config_key"] for r in records)
            == Counter(r["config_key"] for r in whole) == Counter({k: 2 for k in {
                str(r["config_key"]) for r in whole}}))
    fixed = [r["outcome"] for r in records if r["variant"] == "fixed"]
    assert fixed == ["clean"] * 4 and fixed == [r["outcome"] for r in whole
                                                if r["variant"] == "fixed"]
    assert _controlled(records) == _controlled(whole)
    # every bundle a record names came along, and the grid is saved whole to resume
    for record in records:
        if record["bundle"] is not None:
            assert (merged / str(record["bundle"])).is_file()
    assert resume_spec(merged) == replace(resume_spec(campaigns / "shard-1"), shard=WHOLE)
    assert main(["report", str(merged / RESULTS_FILE), "-o", str(campaigns / "report")]) == 0


def test_merge_of_missing_shards_says_how_to_finish(
    campaigns: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    partial = campaigns / "partial"
    assert main(["merge", str(partial), *_shards(campaigns)[:3]]) == 4
    captured = capsys.readouterr()
    assert f"campaign {GRID.campaign}: 6/8 trials" in captured.out
    assert f"shmstress campaign --out {partial} --resume" in captured.err
    assert resume_spec(partial).shard == WHOLE


@pytest.mark.parametrize("mistake", ["twice", "into-itself", "other-seed", "other-record",
                                     "other-grid"])
def test_merge_refuses_duplicate_or_conflicting_records_in_one_line(
    campaigns: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], mistake: str
) -> None:
    shards = _shards(campaigns)
    out = tmp_path / "out"
    if mistake == "twice":
        args = [shards[0], *shards]
        fragment = "repeats a record of"
    elif mistake == "into-itself":
        assert main(["merge", str(out), *shards]) == 0
        capsys.readouterr()
        before = (out / RESULTS_FILE).read_bytes()
        args, fragment = shards[1:2], "repeats a record of"
    else:
        forged = tmp_path / "forged"
        shutil.copytree(shards[3], forged)
        if mistake in ("other-seed", "other-record"):  # shard 4's trials, as another run
            lines = _records(forged / RESULTS_FILE)
            if mistake == "other-seed":
                lines[0]["seed"] = int(str(lines[0]["seed"])) + 1
                fragment = "its grid gives it"
            else:
                lines[0]["started_at"] = "2026-01-01T00:00:00.000Z"
                fragment = "both record trial"
            (forged / RESULTS_FILE).write_text(
                "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
            args = [*shards, str(forged)] if mistake == "other-record" else [
                *shards[:3], str(forged)]
        else:
            spec = resume_spec(forged)
            (forged / STATE_FILE).write_text(replace(spec, seed=8).to_json(), encoding="utf-8")
            fragment = "with different grids"
            args = [*shards[:3], str(forged)]
    code = main(["merge", str(out), *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and fragment in err, err
    if mistake == "into-itself":
        assert (out / RESULTS_FILE).read_bytes() == before, "nothing half-merged"
    else:
        assert not out.exists(), "nothing written"


@pytest.mark.parametrize(("shard", "extra", "fragment"), [
    ("0/4", [], "--shard must be I/N with 1 <= I <= N"),
    ("5/4", [], "--shard must be I/N with 1 <= I <= N"),
    ("1/0", [], "--shard must be I/N with 1 <= I <= N"),
    ("-1/4", [], "--shard must be I/N with 1 <= I <= N"),
    ("2", [], "--shard must be I/N with 1 <= I <= N"),
    ("a/b", [], "--shard must be I/N with 1 <= I <= N"),
    ("1/2/3", [], "--shard must be I/N with 1 <= I <= N"),
    ("2/4", ["--campaign-id", "x"], "needs --seed and --campaign-id"),
    ("2/4", ["--seed", "1"], "needs --seed and --campaign-id"),
    ("3/3", ["--seed", "1", "--campaign-id", "x", "--trials", "1", "--strategy", "pct",
             "--variant", "fixed", "--workers", "binder=1", "--workers", "informer=1",
             "--workers", "gatherer=1"], "the grid has 1 trials, so at most"),
])
def test_bad_shard_specs_are_refused_in_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shard: str, extra: list[str],
    fragment: str,
) -> None:
    base = [] if extra else ["--seed", "1", "--campaign-id", "x"]
    assert main(["campaign", "--out", str(tmp_path), "--quiet", f"--shard={shard}",
                 *base, *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err, err
    assert not (tmp_path / RESULTS_FILE).exists() and not (tmp_path / STATE_FILE).exists()


def test_a_campaign_id_already_recorded_is_refused(
    campaigns: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    again = campaigns / "again"
    shutil.copytree(campaigns / "shard-1", again)
    before = (again / RESULTS_FILE).read_bytes()
    assert main(["campaign", "--out", str(again), "--quiet", "--shard", "1/4", "--seed", "7",
                 "--campaign-id", GRID.campaign]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already holds trials of that campaign" in err
    assert (again / RESULTS_FILE).read_bytes() == before


def test_resume_keeps_the_shard_and_refuses_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = replace(GRID, shard=Shard(3, SHARDS))
    assert GridSpec.from_json(spec.to_json()) == spec
    assert GridSpec.from_json(replace(GRID, shard=WHOLE).to_json()).shard == WHOLE
    old = json.loads(GRID.to_json())
    del old["shard"]  # a grid saved before shards existed: the whole grid
    assert GridSpec.from_json(json.dumps(old)).shard == WHOLE
    (tmp_path / STATE_FILE).write_text(spec.to_json(), encoding="utf-8")
    assert main(["campaign", "--out", str(tmp_path), "--resume", "--shard", "1/4"]) == 2
    assert "drop --shard" in capsys.readouterr().err


def test_shards_are_contiguous_blocks_that_cover_the_list_once() -> None:
    items = list(range(10))
    blocks = [Shard(i, 4).select(items) for i in range(1, 5)]
    assert blocks == [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]]
    assert Shard(1, 1).select(items) == items


EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "ci"
CI_VALUES = {"${{ matrix.shard }}": "2", "${{ env.SHARDS }}": "4",
             "${{ github.run_id }}": "10987654321"}


def _campaign_words(script: str, env: dict[str, str], tmp_path: Path) -> list[str]:
    """The words the script passes to ``shmstress`` (a stub on PATH that writes them)."""
    stub = tmp_path / "bin"
    stub.mkdir(exist_ok=True)
    (stub / "pip").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    (stub / "shmstress").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/words\n',
                                    encoding="utf-8")
    for name in ("pip", "shmstress"):
        (stub / name).chmod(0o755)
    env = {**os.environ, **env, "PATH": f"{stub}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["sh", "-c", script], env=env, check=True, timeout=60)
    return (tmp_path / "words").read_text(encoding="utf-8").splitlines()


def _grid_of(words: list[str]) -> GridSpec:
    assert words[0] == "campaign", words
    return _grid_from_args(build_parser().parse_args(words))


def test_the_github_actions_example_runs_shard_i_of_n(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((EXAMPLES / "github-actions-shards.yml").read_text())
    shards = workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, int(workflow["env"]["SHARDS"]) + 1))
    (script,) = [step["run"] for step in workflow["jobs"]["shard"]["steps"]
                 if "shmstress campaign" in step.get("run", "")]
    for expression, value in CI_VALUES.items():
        script = script.replace(expression, value)
    assert "${{" not in script
    spec = _grid_of(_campaign_words(script, {}, tmp_path))
    assert (spec.shard, spec.seed, spec.campaign) == (Shard(2, 4), 10987654321,
                                                      "nightly-10987654321")
    merge = [step["run"] for step in workflow["jobs"]["merge"]["steps"] if "run" in step]
    assert any(run.startswith("shmstress merge ") for run in merge)


def test_the_kubernetes_example_runs_shard_index_plus_one(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    job = yaml.safe_load((EXAMPLES / "k8s-indexed-job.yaml").read_text())
    assert job["spec"]["completionMode"] == "Indexed"
    (container,) = job["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item.get("value", "") for item in container["env"]}
    assert env["SHARDS"] == str(job["spec"]["completions"])
    script = container["args"][0]
    seen: dict[int, tuple[int, str]] = {}
    for index in range(job["spec"]["completions"]):
        spec = _grid_of(_campaign_words(script, {**env, "JOB_COMPLETION_INDEX": str(index),
                                                 "JOB_UID": "0d5e-uid"}, tmp_path))
        assert spec.shard == Shard(index + 1, 4)
        seen[index] = (spec.seed, spec.campaign)
    assert len(set(seen.values())) == 1 and seen[0][1] == "nightly-0d5e-uid"
