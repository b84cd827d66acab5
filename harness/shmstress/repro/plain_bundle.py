"""The repro bundle of a plain-code failure: where the scenario is, and its steps.

A plain bundle names the scenario (as the user gave it, and resolved), the
bounds of the board, the execution seed (every process's ``random`` derives
from it) and the schedule: for each step, which process took which point.
Replaying it runs the scenario once, taking exactly those steps. Its layout
is a msgspec Struct, so a wrong field is one line naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from shmstress.controlled.strategies.base import StrategySpec
from shmstress.core.errors import BundleError, ScenarioError
from shmstress.core.files import write_text_atomically, write_text_new
from shmstress.core.provenance import package_version
from shmstress.core.trace import Step
from shmstress.plain.outcome import PlainEnd, PlainOutcome
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from shmstress.reports.decoding import describe_error
from shmstress.repro.bundle import (
    LOG_SUFFIX,
    decoded,
    execution_number,
    path_safe,
    readable_version,
)
from shmstress.repro.bundle_code import CodeRef
from shmstress.repro.bundle_json import read_document
from shmstress.repro.bundle_schema import StrategyDoc, strategy_doc, strategy_of

FORMAT = "shmstress-plain-bundle"
FORMAT_VERSION = 2  # 2: ``execution`` numbered from 1 (``bundle.EXECUTIONS_FROM_ONE``)
READABLE_VERSIONS = (1, 2)
FailureEnd = Literal["failed", "deadlock", "no-progress"]


class FailureDoc(msgspec.Struct, kw_only=True):
    end: FailureEnd
    worker: int
    message: str


class LimitsDoc(msgspec.Struct, kw_only=True):
    max_processes: int
    max_steps: int
    max_objects: int
    trace: list[str] = msgspec.field(default_factory=list)  # --trace, resolved


class PlainBundleDoc(msgspec.Struct, kw_only=True):
    format: str
    format_version: int
    shmstress_version: str = "unknown"
    scenario: str  # as the user named it (a path relative to where they ran it)
    scenario_path: str  # resolved when it was found
    # The sha256 of the scenario's file when it is named by path (``bundle_code``): a replay
    # refuses a file that changed since. Left out for a module name, and by older bundles.
    code_sha256: str | msgspec.UnsetType = msgspec.UNSET
    limits: LimitsDoc
    strategy: StrategyDoc
    seed: int
    # The failing execution, numbered from 1 as printed ("failure in execution 4", the
    # bundle's name "-e4"); format version 1 numbered it from 0.
    execution: int
    execution_seed: int
    preemptions: int
    failure: FailureDoc
    processes: list[str]
    labels: list[str]
    steps: list[tuple[int, int]]
    # free mode: steps after which code with no points ran outside the step lock, as
    # positions in ``steps`` (from 0, as JSON arrays are; printed as step position + 1)
    loose: list[int] = msgspec.field(default_factory=list)


@dataclass(frozen=True)
class PlainBundle:
    """Everything a replay needs, decoded."""

    scenario: str
    scenario_path: str
    limits: LimitsDoc
    strategy: StrategySpec
    seed: int
    execution: int  # from 1, as printed
    execution_seed: int
    preemptions: int
    failure: FailureDoc
    processes: tuple[str, ...]
    steps: tuple[Step, ...]
    code_sha256: str | None = None  # of the scenario's file, when it is named by path
    loose: tuple[int, ...] = ()  # the steps a replay cannot promise (free mode's)

    def spec(self) -> PlainSpec:
        """The session to replay in."""
        return PlainSpec(self.scenario_ref(), max_processes=self.limits.max_processes,
                         max_steps=self._max_steps(), max_objects=self.limits.max_objects,
                         trace=tuple(self.limits.trace))

    def scenario_ref(self) -> ScenarioRef:
        """The scenario a replay runs: looked for as named, then resolved."""
        for candidate in (self.scenario, self.scenario_path):
            try:
                return ScenarioRef.parse(candidate)
            except ScenarioError:
                continue
        raise BundleError(f"the bundle's scenario {self.scenario} is not here (nor at "
                          f"{self.scenario_path})")

    @property
    def code(self) -> CodeRef:
        """The code replaying this bundle imports: see ``bundle_code``."""
        return scenario_code(self.scenario, self.scenario_ref())

    def _max_steps(self) -> int:
        """Room for every recorded step; but a no-progress failure found past the step bound
        (its probe's steps: ``plain.progress``) replays with that bound, to probe again."""
        if self.failure.end == "no-progress" and len(self.steps) > self.limits.max_steps:
            return self.limits.max_steps
        return max(self.limits.max_steps, len(self.steps) + 1)


def from_outcome(named: str, spec: PlainSpec, strategy: StrategySpec, seed: int,
                 index: int, outcome: PlainOutcome) -> PlainBundle:
    """The bundle of ``outcome``, the failing ``index``-th execution (from 0) of a search."""
    failure = outcome.failure
    assert failure is not None and outcome.failed
    return PlainBundle(
        scenario=named, scenario_path=spec.scenario.describe(),
        limits=LimitsDoc(max_processes=spec.max_processes, max_steps=spec.max_steps,
                         max_objects=spec.max_objects,
                         trace=[str(Path(item).resolve()) if Path(item).exists() else item
                                for item in spec.trace]),
        strategy=strategy, seed=seed, execution=index + 1,
        execution_seed=outcome.execution_seed, preemptions=outcome.preemptions,
        failure=FailureDoc(end=failure.end.value,  # type: ignore[arg-type]
                           worker=failure.worker, message=failure.message),
        processes=outcome.processes,
        steps=tuple(step.step for step in outcome.steps),
        code_sha256=scenario_code(named, spec.scenario).digest(),
        loose=outcome.loose,
    )


def scenario_code(named: str, ref: ScenarioRef) -> CodeRef:
    """The code a scenario ``named`` so (found as ``ref``) runs: a file, or a module."""
    file = ref.file
    return CodeRef("scenario", named, file=file, module=None if file else ref.module)


def expected_end(bundle: PlainBundle) -> PlainEnd:
    return PlainEnd(bundle.failure.end)


def to_json(bundle: PlainBundle) -> dict[str, Any]:
    labels: dict[str, int] = {}
    steps = [(step.worker, labels.setdefault(step.label, len(labels))) for step in bundle.steps]
    doc = PlainBundleDoc(
        format=FORMAT, format_version=FORMAT_VERSION, shmstress_version=package_version(),
        scenario=bundle.scenario, scenario_path=bundle.scenario_path, limits=bundle.limits,
        strategy=strategy_doc(bundle.strategy),
        seed=bundle.seed, execution=bundle.execution, execution_seed=bundle.execution_seed,
        preemptions=bundle.preemptions, failure=bundle.failure,
        processes=list(bundle.processes), labels=list(labels), steps=steps,
        code_sha256=bundle.code_sha256 or msgspec.UNSET,
        loose=list(bundle.loose),
    )
    data = msgspec.to_builtins(doc)
    assert isinstance(data, dict)
    return data


def is_plain(data: object) -> bool:
    return isinstance(data, dict) and data.get("format") == FORMAT


def peek_plain(path: Path) -> PlainBundle | None:
    """The plain bundle at ``path``, as data (nothing it names is imported), or None if it
    is none (or unreadable: the tracker bundle reader says why); a plain bundle with a bad
    field is one ``BundleError`` line."""
    try:
        data = read_document(path)
    except BundleError:
        return None
    return decoded(path, data, from_json) if is_plain(data) else None


def from_json(data: object) -> PlainBundle:
    if not is_plain(data):
        raise BundleError(f"not a plain-code bundle (format is not {FORMAT!r})")
    assert isinstance(data, dict)
    version = readable_version(data, "plain bundle", READABLE_VERSIONS)
    try:
        doc = msgspec.convert(data, PlainBundleDoc)
    except msgspec.ValidationError as exc:
        raise BundleError(describe_error(exc, data, PlainBundleDoc)) from None
    for index, (worker, label) in enumerate(doc.steps):
        if not 0 <= label < len(doc.labels) or not 0 <= worker < doc.limits.max_processes:
            raise BundleError(f"steps[{index}] names no known process or label: "
                              f"[{worker}, {label}]")
    return PlainBundle(
        scenario=doc.scenario, scenario_path=doc.scenario_path, limits=doc.limits,
        strategy=strategy_of(doc.strategy), seed=doc.seed,
        execution=execution_number(doc.execution, version),
        execution_seed=doc.execution_seed, preemptions=doc.preemptions, failure=doc.failure,
        processes=tuple(doc.processes),
        steps=tuple(Step(worker, doc.labels[label]) for worker, label in doc.steps),
        code_sha256=None if doc.code_sha256 is msgspec.UNSET else doc.code_sha256,
        loose=tuple(step for step in doc.loose if 0 <= step < len(doc.steps)),
    )


def render_json(bundle: PlainBundle) -> str:
    """Indented JSON with one step per line."""
    data = to_json(bundle)
    steps = data.pop("steps")
    head = json.dumps(data, indent=1)
    lines = ",\n".join(f"  [{worker}, {label}]" for worker, label in steps)
    return f'{head[:-2]},\n "steps": [\n{lines}\n ]\n}}\n'


def bundle_name(bundle: PlainBundle) -> str:
    where, _, function = bundle.scenario.rpartition(":")
    stem = path_safe(Path(where).stem if where.endswith(".py") else where, "_")
    return (f"{stem}-{path_safe(function, '_')}-plain-seed{bundle.seed}-"
            f"e{bundle.execution}.json")


def write_plain_bundle(bundle: PlainBundle, path: Path) -> Path:
    """Write ``bundle`` into directory ``path`` (or as file ``path`` if it ends in .json).

    In a directory it takes its own name, or ``<name>-2`` and so on when that name or its
    log's (``.log`` beside it) is taken: a rerun of the same seed never replaces the
    evidence of the failure it reruns."""
    if path.suffix == ".json":
        return write_text_atomically(path, render_json(bundle), "the repro bundle")
    stem = bundle_name(bundle).removesuffix(".json")
    return write_text_new(path, stem, ".json", render_json(bundle), "the repro bundle",
                          companions=(LOG_SUFFIX,))
