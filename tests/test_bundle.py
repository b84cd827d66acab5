"""The repro bundle file: round trip, and one clear line (exit 2) for anything unreadable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.controlled.strategies import (
    ExhaustiveSpec,
    FreeRunSpec,
    PctSpec,
    RandomWalkSpec,
    StrategySpec,
)
from shmstress.core.errors import BundleError
from shmstress.core.files import ArtifactExistsError
from shmstress.core.noise import NoiseConfig
from shmstress.core.trace import Step
from shmstress.repro.bundle import (
    Bundle,
    ExpectedViolation,
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
        strategy=PctSpec(depth=3), phase_changes=(100, 180),
        steps=(Step(3, "Start scheduling cycle"), Step(0, "take pod to bind"),
               Step(3, "pick pod")),
        violation=ExpectedViolation("gather-complete", {"device": 1, "claim": 2}, "missed it", 3),
        noise=NoiseConfig(0.0), execution=5, preemptions=1,
    )
    return Bundle(**{**base.__dict__, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize("bundle", [
    _bundle(),
    _bundle(strategy=PctSpec(depth=4, spin="aside")),
    _bundle(mode="free", execution=None, noise=NoiseConfig(0.25, ("yield",), 50.0),
            strategy=FreeRunSpec(), phase_changes=(), checks=("gather-complete",)),
])
def test_a_bundle_survives_its_json(bundle: Bundle) -> None:
    assert from_json(json.loads(render_json(bundle))) == bundle
    data = to_json(bundle)
    assert data["format_version"] == 2 and data["shmstress_version"]
    assert len(data["labels"]) == 3  # type: ignore[arg-type]


# What the previous release wrote for _bundle(package_version="0.1.0"): format version 1,
# which numbered the failing execution from 0 (the fifth: 4).
PREVIOUS_RELEASE = """\
{
 "format": "shmstress-repro-bundle",
 "format_version": 1,
 "shmstress_version": "0.1.0",
 "tracker": "dra",
 "variant": "gather-unchecked",
 "config": {
  "counts": {
   "binder": 2,
   "informer": 1,
   "gatherer": 1
  },
  "params": {
   "nodes": 2,
   "devices-per-node": 4
  },
  "checks": null,
  "noise": {
   "probability": 0.0,
   "kinds": [
    "yield",
    "sleep"
   ],
   "max_sleep_us": 100.0
  }
 },
 "seed": 7,
 "execution_seed": 123456789,
 "execution": 4,
 "mode": "controlled",
 "strategy": {
  "name": "pct",
  "depth": 3,
  "spin": "demote"
 },
 "phase_changes": [
  100,
  180
 ],
 "preemptions": 1,
 "violation": {
  "invariant": "gather-complete",
  "fields": {
   "device": 1,
   "claim": 2
  },
  "message": "missed it",
  "worker": 3,
  "at_rest": false
 },
 "labels": [
  "Start scheduling cycle",
  "take pod to bind",
  "pick pod"
 ],
 "steps": [
  [3, 0],
  [0, 1],
  [3, 2]
 ]
}
"""


# What this release writes for it: format version 2, the fifth execution numbered 5 as
# printed; every other byte as before.
THIS_RELEASE = (PREVIOUS_RELEASE.replace('"format_version": 1,', '"format_version": 2,')
                .replace('"execution": 4,', '"execution": 5,'))


def test_a_bundle_of_the_previous_release_loads_and_is_written_anew_but_for_its_numbering(
    tmp_path: Path,
) -> None:
    assert THIS_RELEASE.count("\n") == PREVIOUS_RELEASE.count("\n")
    assert sum(a != b for a, b in zip(THIS_RELEASE.splitlines(), PREVIOUS_RELEASE.splitlines(),
                                      strict=True)) == 2
    loaded = load_bundle(_corrupt(tmp_path, PREVIOUS_RELEASE))
    assert loaded == _bundle(package_version="0.1.0")
    assert loaded.execution == 5  # renumbered from 1, as the run that wrote it printed
    assert render_json(loaded) == THIS_RELEASE
    assert load_bundle(_corrupt(tmp_path, THIS_RELEASE)) == loaded
    assert bundle_name(loaded) == "dra-gather-unchecked-controlled-seed7-e5.json"


@pytest.mark.parametrize(("version", "stored"), [(1, -1), (2, 0), (2, -3)])
def test_an_execution_before_the_first_is_refused(tmp_path: Path, version: int, stored: int
                                                  ) -> None:
    data = json.loads(THIS_RELEASE)
    data.update(format_version=version, execution=stored)
    with pytest.raises(BundleError, match=f"field execution: {stored} is no execution"):
        load_bundle(_corrupt(tmp_path, json.dumps(data)))


def test_a_bundle_without_the_keys_it_may_omit_loads() -> None:
    data = json.loads(PREVIOUS_RELEASE)
    for key in ("shmstress_version", "execution", "preemptions"):
        del data[key]
    del data["config"]["checks"]
    del data["strategy"]["depth"], data["strategy"]["spin"]
    for key in ("message", "worker", "at_rest"):
        del data["violation"][key]
    loaded = from_json(data)
    assert (loaded.package_version, loaded.execution, loaded.preemptions) == ("unknown", None, None)
    assert loaded.strategy == PctSpec()
    assert loaded.violation == ExpectedViolation("gather-complete", {"device": 1, "claim": 2}, "")


@pytest.mark.parametrize(("strategy", "stored"), [
    (PctSpec(depth=4, spin="aside"), {"name": "pct", "depth": 4, "spin": "aside"}),
    (ExhaustiveSpec(bound=3), {"name": "exhaustive", "bound": 3}),
    (RandomWalkSpec(), {"name": "random_walk"}),
])
def test_a_strategy_stores_only_its_own_knobs(strategy: StrategySpec, stored: object) -> None:
    data = to_json(_bundle(strategy=strategy))
    assert data["strategy"] == stored
    assert from_json(data).strategy == strategy


@pytest.mark.parametrize("version", [0, 3, 99, "1", None, True])
def test_a_bundle_of_another_format_version_is_refused_by_its_version(
    tmp_path: Path, version: object
) -> None:
    data = to_json(_bundle())
    data["format_version"] = version
    data["seed"] = "not even checked"  # the version is what is wrong, so it is what is said
    path = _corrupt(tmp_path, json.dumps(data))
    with pytest.raises(BundleError) as error:
        load_bundle(path)
    message = str(error.value)
    assert message.startswith(f"{path}: bundle format version {version!r} is not supported")
    assert "\n" not in message and "seed" not in message


def test_it_is_written_under_its_own_name_in_a_directory(tmp_path: Path) -> None:
    bundle = _bundle()
    path = write_bundle(bundle, tmp_path / "out")
    assert path == tmp_path / "out" / bundle_name(bundle)
    # the bundle's id makes the name unique: a rerun of the same seed gets another one
    assert path.name == f"dra-gather-unchecked-controlled-seed7-e5-{bundle.id}.json"
    assert load_bundle(path) == _bundle()
    assert write_bundle(_bundle(), tmp_path / "x.json") == tmp_path / "x.json"


def test_a_bundle_never_replaces_a_file(tmp_path: Path) -> None:
    bundle = _bundle()
    first = write_bundle(bundle, tmp_path)
    first.with_suffix(".log").write_text("its log")
    again = write_bundle(bundle, tmp_path)  # the same id, even: a free name, not the same
    assert again.name == f"{first.stem}-2.json" and first.read_text() == again.read_text()
    with pytest.raises(ArtifactExistsError):
        write_bundle(bundle, first)
    assert write_bundle(bundle, first, overwrite=True) == first


def _corrupt(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bundle.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("mutate", "fragment"), [
    (lambda d: d.update(format_version=99), "format version 99 is not supported"),
    (lambda d: d.update(format="something-else"), "not a shmstress repro bundle"),
    (lambda d: d["steps"].append([9, 0]), "names worker 9"),
    (lambda d: d["steps"].append([0, 99]), "names label 99"),
    (lambda d: d.update(format_version=3), "format version 3 is not supported"),
    (lambda d: d.update(format_version="1"), "format version '1' is not supported"),
    (lambda d: d.update(seed="seven"), "field seed: Expected `int`, got `str`"),
    (lambda d: d.update(seed=True), "field seed: Expected `int`, got `bool`"),
    (lambda d: d.update(phase_changes=[5, 3]), "phase_changes"),
    (lambda d: d.pop("violation"), "missing required field violation"),
    (lambda d: d["config"]["noise"].pop("kinds"), "missing required field config.noise.kinds"),
    (lambda d: d["config"]["counts"].update(informer="1"), "field config.counts.informer: "),
    (lambda d: d["violation"]["fields"].update(claim=None), "field violation.fields.claim: "),
    (lambda d: d["config"].update(params=[2]), "field config.params: Expected `object`"),
    (lambda d: d["steps"].append([0, 1, 2]), r"field steps\[3\]: Expected `array` of length 2"),
    (lambda d: d["labels"].append(7), r"field labels\[3\]: Expected `str`"),
    (lambda d: d.update(mode="sideways"), "field mode: Invalid enum value 'sideways'"),
    (lambda d: d["strategy"].update(depth="deep"), "field strategy.depth: "),
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
