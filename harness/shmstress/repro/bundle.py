"""The repro bundle: one JSON file that replays one failure, and its validation.

A bundle holds what a replay needs and nothing it can recompute: the tracker,
variant and scenario, the seeds the workers' RNGs derive from, the noise
whose draws a free run made, the phase changes, the schedule as (worker,
label) steps, and the violation it must reproduce. Labels are stored once
in a table and steps index it, which keeps long free-run schedules small.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from shmstress.controlled.result import ControlledResult
from shmstress.controlled.strategies.base import StrategySpec
from shmstress.core.config import RunConfig
from shmstress.core.errors import BundleError, ConfigError
from shmstress.core.noise import NoiseConfig
from shmstress.core.result import RunResult, Violation, differences, principal
from shmstress.core.trace import Step

FORMAT = "shmstress-repro-bundle"
FORMAT_VERSION = 1
FREE = "free"
CONTROLLED = "controlled"
_MODES = (FREE, CONTROLLED)


def package_version() -> str:
    try:
        return version("shmstress")
    except PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class BundleViolation:
    """The violation a replay must reproduce: the invariant and its fields decide."""

    invariant: str
    fields: Mapping[str, int]
    message: str
    worker: int | None = None
    at_rest: bool = False

    @classmethod
    def of(cls, found: Violation) -> BundleViolation:
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
    violation: BundleViolation
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
        phase_changes=result.phase_points,
        steps=result.recording.steps,
        violation=BundleViolation.of(violation),
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
        violation=BundleViolation.of(violation),
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


def check_fits(bundle: Bundle, resolved: RunConfig) -> None:
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
    steps = [[s.worker, labels.setdefault(s.label, len(labels))] for s in bundle.steps]
    strategy: dict[str, object] = {"name": bundle.strategy.name}
    if bundle.strategy.name == "pct":
        strategy["depth"] = bundle.strategy.depth
        strategy["spin"] = bundle.strategy.spin
    if bundle.strategy.name == "exhaustive":
        strategy["bound"] = bundle.strategy.bound
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "shmstress_version": bundle.package_version,
        "tracker": bundle.tracker,
        "variant": bundle.variant,
        "config": {
            "counts": dict(bundle.counts),
            "params": dict(bundle.params),
            "checks": list(bundle.checks) if bundle.checks is not None else None,
            "noise": {
                "probability": bundle.noise.probability,
                "kinds": list(bundle.noise.kinds),
                "max_sleep_us": bundle.noise.max_sleep_us,
            },
        },
        "seed": bundle.seed,
        "execution_seed": bundle.execution_seed,
        "execution": bundle.execution,
        "mode": bundle.mode,
        "strategy": strategy,
        "phase_changes": list(bundle.phase_changes),
        "preemptions": bundle.preemptions,
        "violation": {
            "invariant": bundle.violation.invariant,
            "fields": dict(bundle.violation.fields),
            "message": bundle.violation.message,
            "worker": bundle.violation.worker,
            "at_rest": bundle.violation.at_rest,
        },
        "labels": list(labels),
        "steps": steps,
    }


def from_json(data: object) -> Bundle:
    """Validate and decode; every problem is one BundleError line."""
    top = _mapping(data, "the bundle")
    if top.get("format") != FORMAT:
        raise BundleError(f"not a shmstress repro bundle (format {top.get('format')!r})")
    found_version = top.get("format_version")
    if found_version != FORMAT_VERSION:
        raise BundleError(
            f"bundle format version {found_version!r} is not supported by shmstress "
            f"{package_version()} (it reads version {FORMAT_VERSION})"
        )
    config = _mapping(top.get("config"), "config")
    noise = _mapping(config.get("noise"), "config.noise")
    strategy = _mapping(top.get("strategy"), "strategy")
    violation = _mapping(top.get("violation"), "violation")
    labels = [_str(text, "labels[]") for text in _list(top.get("labels"), "labels")]
    counts = _int_map(config.get("counts"), "config.counts")
    workers = sum(counts.values())
    steps = []
    for index, raw in enumerate(_list(top.get("steps"), "steps")):
        pair = _list(raw, f"steps[{index}]")
        if len(pair) != 2:
            raise BundleError(f"steps[{index}] must be [worker, label index]")
        worker, label = _int(pair[0], f"steps[{index}][0]"), _int(pair[1], f"steps[{index}][1]")
        if not 0 <= worker < workers:
            raise BundleError(f"steps[{index}] names worker {worker}; the bundle has {workers}")
        if not 0 <= label < len(labels):
            raise BundleError(f"steps[{index}] names label {label}; the table has {len(labels)}")
        steps.append(Step(worker, labels[label]))
    phase_changes = tuple(_int(v, "phase_changes[]") for v in _list(top.get("phase_changes"),
                                                                     "phase_changes"))
    if len(phase_changes) > 2 or list(phase_changes) != sorted(phase_changes):
        raise BundleError("phase_changes must be at most two ascending step numbers")
    mode = _str(top.get("mode"), "mode")
    if mode not in _MODES:
        raise BundleError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
    checks_raw = config.get("checks")
    execution = top.get("execution")
    preemptions = top.get("preemptions")
    violation_worker = violation.get("worker")
    try:
        return Bundle(
            tracker=_str(top.get("tracker"), "tracker"),
            variant=_str(top.get("variant"), "variant"),
            counts=counts,
            params=_int_map(config.get("params"), "config.params"),
            checks=None if checks_raw is None else tuple(
                _str(c, "config.checks[]") for c in _list(checks_raw, "config.checks")),
            seed=_int(top.get("seed"), "seed"),
            execution_seed=_int(top.get("execution_seed"), "execution_seed"),
            mode=mode,
            strategy=StrategySpec(
                _str(strategy.get("name"), "strategy.name"),
                depth=_int(strategy.get("depth", 3), "strategy.depth"),
                bound=_int(strategy.get("bound", 2), "strategy.bound"),
                spin=_str(strategy.get("spin", StrategySpec.spin), "strategy.spin"),
            ),
            phase_changes=phase_changes,
            steps=tuple(steps),
            violation=BundleViolation(
                invariant=_str(violation.get("invariant"), "violation.invariant"),
                fields=_int_map(violation.get("fields"), "violation.fields"),
                message=_str(violation.get("message", ""), "violation.message"),
                worker=(None if violation_worker is None
                        else _int(violation_worker, "violation.worker")),
                at_rest=bool(violation.get("at_rest", False)),
            ),
            noise=NoiseConfig(
                float(_number(noise.get("probability"), "config.noise.probability")),
                tuple(_str(k, "config.noise.kinds[]")
                      for k in _list(noise.get("kinds"), "config.noise.kinds")),
                float(_number(noise.get("max_sleep_us"), "config.noise.max_sleep_us")),
            ),
            execution=None if execution is None else _int(execution, "execution"),
            preemptions=None if preemptions is None else _int(preemptions, "preemptions"),
            package_version=_str(top.get("shmstress_version", "unknown"), "shmstress_version"),
        )
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise BundleError(f"malformed bundle: {exc}") from exc


def render_json(bundle: Bundle) -> str:
    """Indented JSON with one step per line, so a long schedule stays readable."""
    data = to_json(bundle)
    steps = data.pop("steps")
    assert isinstance(steps, list)
    head = json.dumps(data, indent=1)
    lines = ",\n".join(f"  [{worker}, {label}]" for worker, label in steps)
    return f'{head[:-2]},\n "steps": [\n{lines}\n ]\n}}\n'


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise BundleError(f"{what} must be a JSON object")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise BundleError(f"{what} must be a JSON list")
    return value


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise BundleError(f"{what} must be a string")
    return value


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BundleError(f"{what} must be an integer")
    return value


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BundleError(f"{what} must be a number")
    return float(value)


def _int_map(value: object, what: str) -> dict[str, int]:
    return {str(k): _int(v, f"{what}.{k}") for k, v in _mapping(value, what).items()}


# -- files ------------------------------------------------------------------------------------
def path_safe(text: str, fill: str = "-") -> str:
    """``text`` with each run of characters a CI artifact store may refuse in a path
    (``:``, spaces, slashes...) replaced by ``fill``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", fill, text)


def bundle_name(bundle: Bundle) -> str:
    tracker = path_safe(Path(bundle.tracker.split(":")[0]).stem, "_")
    execution = f"-e{bundle.execution + 1}" if bundle.execution is not None else ""
    return f"{tracker}-{bundle.variant}-{bundle.mode}-seed{bundle.seed}{execution}.json"


def write_bundle(bundle: Bundle, path: Path) -> Path:
    """Write ``bundle`` to ``path`` (a directory gets the bundle's own file name)."""
    target = path / bundle_name(bundle) if path.is_dir() or not path.suffix else path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_json(bundle))
    except OSError as exc:
        raise ConfigError(f"cannot write the repro bundle {target}: {exc}") from exc
    return target


def load_bundle(path: Path) -> Bundle:
    try:
        text = path.read_text()
    except OSError as exc:
        raise BundleError(f"cannot read bundle {path}: {exc.strerror or exc}") from exc
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
