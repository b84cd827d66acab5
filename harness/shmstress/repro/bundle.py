"""The repro bundle: one JSON file that replays one failure, and its validation.

A bundle holds what a replay needs and nothing it can recompute: the tracker,
variant and scenario, the seeds the workers' RNGs derive from, the noise
whose draws a free run made, the phase changes, the schedule as (worker,
label) steps, and the violation it must reproduce. Labels are stored once
in a table and steps index it, which keeps long free-run schedules small.
The file's layout is ``bundle_schema.BundleDoc``; this module maps it to and
from a ``Bundle`` and checks what the layout cannot (steps, phase changes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import cast

from msgspec import UNSET

from shmstress.controlled.result import ControlledResult
from shmstress.controlled.strategies.base import StrategySpec
from shmstress.core.config import RunConfig
from shmstress.core.errors import BundleError
from shmstress.core.files import write_text_atomically
from shmstress.core.noise import NoiseConfig
from shmstress.core.result import RunResult, Violation, differences, principal
from shmstress.core.trace import Step
from shmstress.repro import bundle_schema

FORMAT = "shmstress-repro-bundle"
FORMAT_VERSION = 1
FREE = "free"
CONTROLLED = "controlled"


def package_version() -> str:
    try:
        return version("shmstress")
    except PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class ExpectedViolation:
    """The violation a replay must reproduce: the invariant and its fields decide."""

    invariant: str
    fields: Mapping[str, int]
    message: str
    worker: int | None = None
    at_rest: bool = False

    @classmethod
    def of(cls, found: Violation) -> ExpectedViolation:
        return cls(
            invariant=found.invariant,
            fields=dict(found.fields),
            message=found.message,
            worker=found.worker.worker_id if found.worker is not None else None,
            at_rest=found.at_rest,
        )

    def mismatch(self, found: Violation) -> dict[str, tuple[object, object]]:
        """What ``found`` does not share with this violation: name -> (recorded, found), for
        the invariant and every field (None where one side lacks it); empty if it matches."""
        return differences(self.invariant, self.fields, found)

    def matches(self, found: Violation | None) -> bool:
        """The same invariant with the same fields (worker pids and timings may differ)."""
        return found is not None and not self.mismatch(found)


@dataclass(frozen=True)
class Bundle:
    tracker: str
    variant: str
    counts: Mapping[str, int]
    params: Mapping[str, int]
    checks: tuple[str, ...] | None
    seed: int  # the run's seed
    execution_seed: int  # every worker's RNG derives from (execution_seed, worker id)
    mode: str  # where the failure was found: free or controlled
    strategy: StrategySpec
    phase_changes: tuple[int, ...]  # steps at which DRAIN, then STOP, began
    steps: tuple[Step, ...]
    violation: ExpectedViolation
    noise: NoiseConfig = field(default_factory=NoiseConfig)  # a free run's: replayed draws
    execution: int | None = None  # 0-based index of the failing execution of a controlled run
    preemptions: int | None = None
    package_version: str = field(default_factory=package_version)

    def run_config(self) -> RunConfig:
        """The configuration of the run that failed (its seed included)."""
        return RunConfig(
            tracker=self.tracker,
            variant=self.variant,
            counts=dict(self.counts),
            params=dict(self.params),
            seed=self.seed,
            noise=self.noise,
            checks=self.checks,
        )

    @property
    def replays_noise_draws(self) -> bool:
        """A free run's workers drew from their RNGs for noise: a replay must draw alike."""
        return self.noise.probability > 0

    @property
    def workers(self) -> int:
        return sum(self.counts.values())


# -- building ---------------------------------------------------------------------------------
def from_free_run(result: RunResult) -> Bundle | None:
    """The bundle of a failing free-mode run, from its schedule tape (None: nothing to save)."""
    config = result.config
    violation = principal(result.violations)
    if violation is None or result.recording is None or config.seed is None:
        return None
    assert config.variant is not None
    return Bundle(
        tracker=config.tracker,
        variant=config.variant,
        counts=dict(config.counts),
        params=dict(config.params),
        checks=config.checks,
        seed=config.seed,
        execution_seed=config.seed,
        mode=FREE,
        strategy=StrategySpec("noise" if config.noise.probability else "none"),
        phase_changes=result.phase_changes,
        steps=result.recording.steps,
        violation=ExpectedViolation.of(violation),
        noise=config.noise,
    )


def tape_lost_note(result: RunResult) -> str | None:
    """Why a free run's bundle may not replay its failure: points past the end of the tape."""
    lost = result.recording.tape_lost if result.recording is not None else 0
    if not lost:
        return None
    return (f"{lost:,} points ran past the schedule tape and are not in the bundle; "
            "a failure among them will not replay")


def from_execution(
    config: RunConfig,
    strategy: StrategySpec,
    execution: int | None,
    execution_seed: int,
    steps: Sequence[Step],
    phase_changes: Sequence[int],
    violations: Sequence[Violation],
    preemptions: int | None,
) -> Bundle | None:
    """The bundle of a failing controlled execution."""
    violation = principal(violations)
    if violation is None or config.seed is None:
        return None
    assert config.variant is not None
    return Bundle(
        tracker=config.tracker,
        variant=config.variant,
        counts=dict(config.counts),
        params=dict(config.params),
        checks=config.checks,
        seed=config.seed,
        execution_seed=execution_seed,
        mode=CONTROLLED,
        strategy=strategy,
        phase_changes=tuple(phase_changes),
        steps=tuple(steps),
        violation=ExpectedViolation.of(violation),
        noise=NoiseConfig(0.0),
        execution=execution,
        preemptions=preemptions,
    )


def from_controlled(result: ControlledResult) -> Bundle | None:
    """The bundle of a controlled run's first failing execution (None: nothing failed)."""
    failing = result.failing
    if failing is None:
        return None
    outcome = failing.outcome
    return from_execution(
        result.run.config, result.strategy, failing.index, outcome.execution_seed,
        outcome.steps, outcome.phase_changes, result.run.violations, outcome.preemptions,
    )


def require_fit(bundle: Bundle, resolved: RunConfig) -> None:
    """Raise BundleError unless the tracker runs exactly the bundle's workers and parameters:
    a role or parameter the bundle lacks would take the tracker's default, and the workers
    would be numbered otherwise than the recorded steps say."""
    problems = [
        f"{what} {dict(recorded)} do not fit the tracker, which runs {dict(runs)}"
        for what, recorded, runs in (("worker counts", bundle.counts, resolved.counts),
                                     ("parameters", bundle.params, resolved.params))
        if dict(recorded) != dict(runs)
    ]
    if problems:
        raise BundleError(f"incompatible bundle for tracker {bundle.tracker}: "
                          + "; ".join(problems))


# -- JSON -------------------------------------------------------------------------------------
def to_json(bundle: Bundle) -> dict[str, object]:
    labels: dict[str, int] = {}
    steps = [(s.worker, labels.setdefault(s.label, len(labels))) for s in bundle.steps]
    spec = bundle.strategy
    pct, exhaustive = spec.name == "pct", spec.name == "exhaustive"
    return bundle_schema.encode(bundle_schema.BundleDoc(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        shmstress_version=bundle.package_version,
        tracker=bundle.tracker,
        variant=bundle.variant,
        config=bundle_schema.ConfigDoc(
            counts=dict(bundle.counts),
            params=dict(bundle.params),
            checks=list(bundle.checks) if bundle.checks is not None else None,
            noise=bundle_schema.NoiseDoc(
                probability=bundle.noise.probability,
                kinds=list(bundle.noise.kinds),
                max_sleep_us=bundle.noise.max_sleep_us,
            ),
        ),
        seed=bundle.seed,
        execution_seed=bundle.execution_seed,
        execution=bundle.execution,
        mode=cast(bundle_schema.Mode, bundle.mode),
        strategy=bundle_schema.StrategyDoc(
            name=spec.name,
            depth=spec.depth if pct else UNSET,
            spin=spec.spin if pct else UNSET,
            bound=spec.bound if exhaustive else UNSET,
        ),
        phase_changes=list(bundle.phase_changes),
        preemptions=bundle.preemptions,
        violation=bundle_schema.ViolationDoc(
            invariant=bundle.violation.invariant,
            fields=dict(bundle.violation.fields),
            message=bundle.violation.message,
            worker=bundle.violation.worker,
            at_rest=bundle.violation.at_rest,
        ),
        labels=list(labels),
        steps=steps,
    ))


def from_json(data: object) -> Bundle:
    """Validate and decode; every problem is one BundleError line naming the field."""
    if not isinstance(data, dict):
        raise BundleError("the bundle must be a JSON object")
    if data.get("format") != FORMAT:
        raise BundleError(f"not a shmstress repro bundle (format {data.get('format')!r})")
    found_version = data.get("format_version")
    if found_version != FORMAT_VERSION or isinstance(found_version, bool):
        raise BundleError(
            f"bundle format version {found_version!r} is not supported by shmstress "
            f"{package_version()} (it reads version {FORMAT_VERSION})"
        )
    doc = bundle_schema.decode(data)
    workers = sum(doc.config.counts.values())
    steps = []
    for index, (worker, label) in enumerate(doc.steps):
        if not 0 <= worker < workers:
            raise BundleError(f"steps[{index}] names worker {worker}; the bundle has {workers}")
        if not 0 <= label < len(doc.labels):
            raise BundleError(
                f"steps[{index}] names label {label}; the table has {len(doc.labels)}"
            )
        steps.append(Step(worker, doc.labels[label]))
    phase_changes = tuple(doc.phase_changes)
    if len(phase_changes) > 2 or list(phase_changes) != sorted(phase_changes):
        raise BundleError("phase_changes must be at most two ascending step numbers")
    config, strategy, violation = doc.config, doc.strategy, doc.violation
    defaults = StrategySpec(strategy.name)
    return Bundle(
        tracker=doc.tracker,
        variant=doc.variant,
        counts=config.counts,
        params=config.params,
        checks=None if config.checks is None else tuple(config.checks),
        seed=doc.seed,
        execution_seed=doc.execution_seed,
        mode=doc.mode,
        strategy=StrategySpec(
            strategy.name,
            depth=defaults.depth if strategy.depth is UNSET else strategy.depth,
            bound=defaults.bound if strategy.bound is UNSET else strategy.bound,
            spin=defaults.spin if strategy.spin is UNSET else strategy.spin,
        ),
        phase_changes=phase_changes,
        steps=tuple(steps),
        violation=ExpectedViolation(
            invariant=violation.invariant,
            fields=violation.fields,
            message=violation.message,
            worker=violation.worker,
            at_rest=violation.at_rest,
        ),
        noise=NoiseConfig(
            config.noise.probability, tuple(config.noise.kinds), config.noise.max_sleep_us
        ),
        execution=doc.execution,
        preemptions=doc.preemptions,
        package_version=doc.shmstress_version,
    )


def render_json(bundle: Bundle) -> str:
    """Indented JSON with one step per line, so a long schedule stays readable."""
    data = to_json(bundle)
    steps = data.pop("steps")
    assert isinstance(steps, list)
    head = json.dumps(data, indent=1)
    lines = ",\n".join(f"  [{worker}, {label}]" for worker, label in steps)
    return f'{head[:-2]},\n "steps": [\n{lines}\n ]\n}}\n'


# -- files ------------------------------------------------------------------------------------
def path_safe(text: str, fill: str = "-") -> str:
    """``text`` with each run of characters a CI artifact store may refuse in a path
    (``:``, spaces, slashes...) replaced by ``fill``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", fill, text)


def bundle_name(bundle: Bundle) -> str:
    tracker = path_safe(Path(bundle.tracker.split(":")[0]).stem, "_")
    execution = f"-e{bundle.execution + 1}" if bundle.execution is not None else ""
    return f"{tracker}-{bundle.variant}-{bundle.mode}-seed{bundle.seed}{execution}.json"


def bundle_target(bundle: Bundle, path: Path) -> Path:
    """Where ``write_bundle(bundle, path)`` writes: a directory gets the bundle's own name."""
    return path / bundle_name(bundle) if path.is_dir() or not path.suffix else path


def write_bundle(bundle: Bundle, path: Path) -> Path:
    """Write ``bundle`` to ``path`` (a directory gets the bundle's own file name), whole or
    not at all: a full disk leaves no cut bundle under the name (``ArtifactError``)."""
    target = bundle_target(bundle, path)
    return write_text_atomically(target, render_json(bundle), "the repro bundle")


def load_bundle(path: Path) -> Bundle:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BundleError(f"cannot read bundle {path}: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"{path} is not a repro bundle: not UTF-8 text (byte "
                          f"{exc.start}: {raw[exc.start:exc.start + 1]!r})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BundleError(f"{path} is not a repro bundle: invalid JSON at line {exc.lineno}, "
                          f"column {exc.colno} ({exc.msg})") from exc
    try:
        return from_json(data)
    except BundleError as exc:
        raise BundleError(f"{path}: {exc}") from exc


def replay_command(path: Path) -> str:
    return f"shmstress replay {path}"
