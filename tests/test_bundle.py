"""The repro bundle file: round trip, and one clear line (exit 2) for anything unreadable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shmstress.cli.main import main
from shmstress.controlled.strategies import StrategySpec
from shmstress.core.errors import BundleError
from shmstress.core.noise import NoiseConfig
from shmstress.core.trace import Step
from shmstress.repro.bundle import (
    Bundle,
    BundleViolation,
    bundle_name,
    from_json,
    load_bundle,
    render_json,
    to_json,
    write_bundle,
)


def _bundle(**changes: object) -> Bundle:
    base = Bundle(
        tracker="dra", variant="gather-unchecked",
        counts={"binder": 2, "informer": 1, "gatherer": 1},
        params={"nodes": 2, "devices-per-node": 4},
        checks=None, seed=7, execution_seed=123456789, mode="controlled",
        strategy=StrategySpec("pct", depth=3), phase_changes=(100, 180),
        steps=(Step(3, "Start scheduling cycle"), Step(0, "take pod to bind"),
               Step(3, "pick pod")),
        violation=BundleViolation("gather-complete", {"device": 1, "claim": 2}, "missed it", 3),
        noise=NoiseConfig(0.0), execution=4, preemptions=1,
    )
    return Bundle(**{**base.__dict__, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize("bundle", [
    _bundle(),
    _bundle(strategy=StrategySpec("pct", depth=4, spin="aside")),
    _bundle(mode="free", execution=None, noise=NoiseConfig(0.25, ("yield",), 50.0),
            strategy=StrategySpec("noise"), phase_changes=(), checks=("gather-complete",)),
])
def test_a_bundle_survives_its_json(bundle: Bundle) -> None:
    assert from_json(json.loads(render_json(bundle))) == bundle
    data = to_json(bundle)
    assert data["format_version"] == 1 and data["shmstress_version"]
    assert len(data["labels"]) == 3  # type: ignore[arg-type]


def test_it_is_written_under_its_own_name_in_a_directory(tmp_path: Path) -> None:
    path = write_bundle(_bundle(), tmp_path / "out")
    assert path == tmp_path / "out" / bundle_name(_bundle())
    assert path.name == "dra-gather-unchecked-controlled-seed7-e5.json"
    assert load_bundle(path) == _bundle()
    assert write_bundle(_bundle(), tmp_path / "x.json") == tmp_path / "x.json"


def _corrupt(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bundle.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("mutate", "fragment"), [
    (lambda d: d.update(format_version=99), "format version 99 is not supported"),
    (lambda d: d.update(format="something-else"), "not a shmstress repro bundle"),
    (lambda d: d["steps"].append([9, 0]), "names worker 9"),
    (lambda d: d["steps"].append([0, 99]), "names label 99"),
    (lambda d: d.update(seed="seven"), "seed must be an integer"),
    (lambda d: d.update(phase_changes=[5, 3]), "phase_changes"),
    (lambda d: d.pop("violation"), "violation must be a JSON object"),
])
def test_an_incompatible_bundle_is_one_line(tmp_path: Path, mutate: object, fragment: str
                                            ) -> None:
    data = to_json(_bundle())
    mutate(data)  # type: ignore[operator]
    path = _corrupt(tmp_path, json.dumps(data))
    with pytest.raises(BundleError, match=fragment) as error:
        load_bundle(path)
    assert "\n" not in str(error.value)
    assert str(path) in str(error.value)


@pytest.mark.parametrize("text", ['{"format": "shmstress-repro-bundle", "steps": [',
                                  "", "[1, 2, 3]", "\x00\x01garbage"])
def test_replaying_a_corrupt_bundle_exits_2_with_one_line(
    tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _corrupt(tmp_path, text)
    assert main(["replay", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert err.startswith("shmstress: error: ") and "\n" not in err
    assert "Traceback" not in err and str(path) in err


def test_a_missing_bundle_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "nope.json")]) == 2
    assert "cannot read bundle" in capsys.readouterr().err
    assert main(["shrink", str(tmp_path / "nope.json"), "-o", str(tmp_path / "o.json")]) == 2


@pytest.mark.parametrize(("change", "fragment"), [
    ({"counts": {"binder": 3, "gatherer": 1}}, "worker counts"),  # the informer's id taken
    ({"params": {"nodes": 2}}, "parameters"),
])
def test_a_bundle_that_does_not_fit_its_tracker_exits_2_with_one_line(
    tmp_path: Path, change: dict[str, object], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_bundle(_bundle(**change), tmp_path / "misfit.json")
    assert main(["replay", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert err.startswith(f"shmstress: error: {path}: incompatible bundle")
    assert fragment in err and "\n" not in err
