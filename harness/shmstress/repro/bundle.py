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
import secrets
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar, cast

from msgspec import UNSET, UnsetType

from shmstress.controlled.result import ControlledResult
from shmstress.controlled.strategies.base import FreeRunSpec, StrategySpec
from shmstress.core.config import RunConfig
from shmstress.core.errors import BundleError
from shmstress.core.files import write_text_atomically, write_text_new
from shmstress.core.noise import UNIFORM, NoiseConfig
from shmstress.core.provenance import Provenance, current_provenance, package_version
from shmstress.core.result import RunResult, Violation, differences, principal
from shmstress.core.trace import Step
from shmstress.repro import bundle_schema
from shmstress.repro.bundle_code import CodeRef, tracker_code
from shmstress.repro.bundle_json import read_document

T = TypeVar("T")

FORMAT = "shmstress-repro-bundle"
FORMAT_VERSION = 2
"""The version this shmstress writes; it reads ``READABLE_VERSIONS``."""
READABLE_VERSIONS = (1, 2)
EXECUTIONS_FROM_ONE = 2
"""The first version (of both bundle formats) whose ``execution`` is numbered from 1, as every
command prints it (``failure in execution 4``, the ``-e4`` of a bundle's name); version 1
stored it from 0, and is renumbered on load, so an older bundle still replays and says the
execution its run printed."""
FREE = "free"
CONTROLLED = "controlled"


LOG_SUFFIX = ".log"
"""A bundle's own log sits beside it: ``<bundle stem>.log``."""


def new_bundle_id() -> str:
    """A short random id: two failures of the same tracker, variant and seed (a rerun with
    ``--seed``, ``--stress-seed``) still get two names, and a log names its bundle by it."""
    return secrets.token_hex(4)


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
    execution: int | None = None  # the failing execution of a controlled run, from 1 as printed
    preemptions: int | None = None
    package_version: str = field(default_factory=package_version)
    # Which failure this is ("" for a bundle written before ids existed): not part of what
    # the failure is, so two bundles of one failure still compare equal.
    id: str = field(default_factory=new_bundle_id, compare=False)
    python_version: str | None = None
    host: str | None = None
    code_commit: str | None = None  # of the code under test, when run in a git checkout
    code_sha256: str | None = None  # of the tracker's file, when it is loaded by path
    # imported from a log: model name -> the log's name (``shmstress import-log``)
    names: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def code(self) -> CodeRef:
        """The code replaying this bundle imports: see ``bundle_code``."""
        return tracker_code(self.tracker)

    def with_provenance(self, found: Provenance) -> Bundle:
        """This bundle stamped with what found it."""
        return replace(self, package_version=found.shmstress_version,
                       python_version=found.python_version, host=found.host,
                       code_commit=found.code_commit)

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
        """A free run's workers drew from their RNGs for noise: a replay must draw alike
        (aimed noise draws from an RNG of its own: nothing to repeat)."""
        return self.noise.draws_from_worker_rng

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
        strategy=FreeRunSpec(),  # its noise is in ``noise``, as on the command line
        phase_changes=result.phase_changes,
        steps=result.recording.steps,
        violation=ExpectedViolation.of(violation),
        noise=config.noise,
        code_sha256=tracker_code(config.tracker).digest(),
    ).with_provenance(current_provenance(config.tracker))


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
    index: int | None,
    execution_seed: int,
    steps: Sequence[Step],
    phase_changes: Sequence[int],
    violations: Sequence[Violation],
    preemptions: int | None,
) -> Bundle | None:
    """The bundle of a failing controlled execution, the ``index``-th (from 0) of its run."""
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
        execution=None if index is None else index + 1,
        preemptions=preemptions,
        code_sha256=tracker_code(config.tracker).digest(),
    ).with_provenance(current_provenance(config.tracker))


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
    return bundle_schema.encode(bundle_schema.BundleDoc(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        shmstress_version=bundle.package_version,
        id=bundle.id or UNSET,
        python_version=bundle.python_version or UNSET,
        host=bundle.host or UNSET,
        code_commit=bundle.code_commit or UNSET,
        code_sha256=bundle.code_sha256 or UNSET,
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
                policy=(bundle.noise.policy
                        if bundle.noise.policy != UNIFORM and bundle.noise.probability
                        else UNSET),
            ),
        ),
        seed=bundle.seed,
        execution_seed=bundle.execution_seed,
        execution=bundle.execution,
        mode=cast(bundle_schema.Mode, bundle.mode),
        strategy=bundle_schema.strategy_doc(bundle.strategy),
        phase_changes=list(bundle.phase_changes),
        preemptions=bundle.preemptions,
        violation=bundle_schema.ViolationDoc(
            invariant=bundle.violation.invariant,
            fields=dict(bundle.violation.fields),
            message=bundle.violation.message,
            worker=bundle.violation.worker,
            at_rest=bundle.violation.at_rest,
        ),
        names=dict(bundle.names) or UNSET,
        labels=list(labels),
        steps=steps,
    ))


def from_json(data: object) -> Bundle:
    """Validate and decode; every problem is one BundleError line naming the field."""
    if not isinstance(data, dict):
        raise BundleError("the bundle must be a JSON object")
    if data.get("format") != FORMAT:
        raise BundleError(f"not a shmstress repro bundle (format {data.get('format')!r})")
    version = readable_version(data, "bundle", READABLE_VERSIONS)
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
    config, violation = doc.config, doc.violation
    return Bundle(
        tracker=doc.tracker,
        variant=doc.variant,
        counts=config.counts,
        params=config.params,
        checks=None if config.checks is None else tuple(config.checks),
        seed=doc.seed,
        execution_seed=doc.execution_seed,
        mode=doc.mode,
        strategy=bundle_schema.strategy_of(doc.strategy),
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
            config.noise.probability, tuple(config.noise.kinds), config.noise.max_sleep_us,
            _policy(config.noise.policy, config.noise.probability),
        ),
        execution=None if doc.execution is None else execution_number(doc.execution, version),
        preemptions=doc.preemptions,
        package_version=doc.shmstress_version,
        id=_known(doc.id) or "",
        python_version=_known(doc.python_version),
        host=_known(doc.host),
        code_commit=_known(doc.code_commit),
        code_sha256=_known(doc.code_sha256),
        names={} if isinstance(doc.names, UnsetType) else doc.names,
    )


def readable_version(data: Mapping[str, object], what: str, readable: Sequence[int]) -> int:
    """The ``format_version`` of a bundle's ``data`` if this shmstress reads it, else one
    BundleError line saying which it reads (a bool is no version, though ``True == 1``)."""
    found = data.get("format_version")
    if type(found) is not int or found not in readable:
        raise BundleError(
            f"{what} format version {found!r} is not supported by shmstress "
            f"{package_version()} (it reads version{'s' if len(readable) > 1 else ''} "
            f"{', '.join(map(str, readable))})"
        )
    return found


def execution_number(stored: int, version: int) -> int:
    """The failing execution a bundle of ``version`` stores as ``stored``, numbered from 1 as
    printed (``EXECUTIONS_FROM_ONE``); one BundleError line if it cannot be one."""
    first = 1 if version >= EXECUTIONS_FROM_ONE else 0
    if stored < first:
        raise BundleError(f"field execution: {stored} is no execution (format version "
                          f"{version} numbers them from {first})")
    return stored - first + 1


def _known(value: str | UnsetType) -> str | None:
    return None if isinstance(value, UnsetType) else value


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


def bundle_stem(bundle: Bundle, tag: str = "") -> str:
    """``dra-gather-unchecked-free-seed3-<tag>-<id>``: what failed, and which failure.

    ``tag`` (already path-safe) names where runs may share a seed (a pytest test id); the
    id makes the name unique, so a rerun with the same seed never takes the name of the
    failure it reruns."""
    tracker = path_safe(Path(bundle.tracker.split(":")[0]).stem, "_")
    execution = f"-e{bundle.execution}" if bundle.execution is not None else ""
    suffix = "".join(f"-{part}" for part in (tag, path_safe(bundle.id)) if part)
    return f"{tracker}-{bundle.variant}-{bundle.mode}-seed{bundle.seed}{execution}{suffix}"


def bundle_name(bundle: Bundle, tag: str = "") -> str:
    return bundle_stem(bundle, tag) + ".json"


def log_path(bundle_path: Path) -> Path:
    """Where the log of the bundle at ``bundle_path`` is: beside it, under its stem."""
    return bundle_path.with_suffix(LOG_SUFFIX)


def is_directory_target(path: Path) -> bool:
    """A directory (existing, or named without a suffix) gets the bundle's own name."""
    return path.is_dir() or not path.suffix


def bundle_target(bundle: Bundle, path: Path) -> Path:
    """Where ``write_bundle(bundle, path)`` writes unless that name is taken by then."""
    return path / bundle_name(bundle) if is_directory_target(path) else path


def write_bundle(bundle: Bundle, path: Path, overwrite: bool = False) -> Path:
    """Write ``bundle`` to ``path`` whole or not at all (a full disk leaves no cut bundle
    under the name: ``ArtifactError``); returns where it went.

    A directory (see ``is_directory_target``) gets a free name (``write_bundle_into``). A
    file path is written only if nothing is there (``ArtifactExistsError``): evidence is
    never replaced, unless ``overwrite`` (a user's explicit ``shrink -o FILE``).
    """
    if is_directory_target(path):
        return write_bundle_into(bundle, path)
    return write_text_atomically(path, render_json(bundle), "the repro bundle",
                                 exclusive=not overwrite)


def write_bundle_into(bundle: Bundle, directory: Path, tag: str = "") -> Path:
    """Write ``bundle`` into ``directory`` under its own name (``bundle_stem``), or
    ``<stem>-2`` and so on when that name or its log's is taken: two failures never share
    a name, and a rerun never replaces the bundle of the failure it reruns."""
    return write_text_new(directory, bundle_stem(bundle, tag), ".json", render_json(bundle),
                          "the repro bundle", companions=(LOG_SUFFIX,))


def load_bundle(path: Path) -> Bundle:
    """The tracker bundle at ``path``, as data: nothing it names is imported (a command that
    replays it checks that code first: ``bundle_code.require_trusted``)."""
    return decoded(path, read_document(path), from_json)


def decoded(path: Path, data: object, decode: Callable[[object], T]) -> T:
    """``decode(data)``, read from the bundle at ``path``: its BundleError names the file,
    and a structure too deep for the decoder is one too."""
    try:
        return decode(data)
    except BundleError as exc:
        raise BundleError(f"{path}: {exc}") from None
    except RecursionError:
        raise BundleError(f"{path}: nested too deeply to be a bundle") from None


def replay_command(path: Path, *options: str) -> str:
    """The command line that replays the bundle at ``path``, quoted for a shell."""
    return shlex.join(["shmstress", "replay", str(path), *options])


def pytest_replay_command(path: Path) -> str:
    """The same replay as a pytest item (``--stress-replay``), for who works in pytest."""
    return shlex.join(["pytest", "--stress-replay", str(path)])


def replay_both_ways(path: Path) -> tuple[str, str]:
    """What a failing pytest test says to replay its bundle: ``replay_command`` and
    ``pytest_replay_command``, with the path absolute, since the reader's shell is rarely in
    the directory pytest ran in."""
    absolute = path.absolute()
    return replay_command(absolute), pytest_replay_command(absolute)


def _policy(written: str | UnsetType, probability: float) -> str:
    """The noise policy of a bundle: absent, uniform (every bundle before aimed noise was),
    except without noise, where no policy is written and none matters (the default)."""
    if not isinstance(written, UnsetType):
        return written
    return UNIFORM if probability else NoiseConfig().policy
