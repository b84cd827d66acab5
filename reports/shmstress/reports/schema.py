"""The results-record schema: one ``results.jsonl`` line per trial, version ``SCHEMA_VERSION``.

The engine writes ``Record[Config]`` (``campaign/record.py``) and the reports read it back
through ``decode``, so writer and reader share one description. It is written with msgspec
Structs because msgspec decodes typed JSON with errors that name the path (``Expected
`int`, got `str` - at `$.config.noise```, a map's ``[...]`` given its key here), is fast
enough to read a nightly history of thousands of lines at every report, and is a small,
well-kept library.

A record is generic: no tracker's roles or parameters are named here.

Version 2 (``"schema": 2`` at the top)::

    {"schema": 2, "campaign": ..., "started_at": ..., "trial": ..., "tracker": ...,
     "variant": ..., "config": {"workers": {ROLE: COUNT, ...}, "params": {NAME: VALUE, ...},
     "noise": P, "mode": "free" | "controlled", "strategy": ..., "duration": S,
     "executions": N | null}, "config_key": ..., "seed": ..., "outcome": ..., ...}

Version 1 (no ``schema`` key) is read too, and upgraded to version 2 on the way in: its
``config.roles`` are the workers and its ``config.params`` the parameters (every
version-1 record a release wrote has both; the rest of its config was specific to one
tracker and is ignored).

Keys a reader does not know are ignored, so a newer engine may add fields without a new
version; a new version is for a change an old reader would misread. So the provenance of
a record (``shmstress_version``, ``python_version``, ``host``, and ``code_commit``, the
commit of the code under test when it ran in a git checkout) came within version 2:
absent from older records, read as unknown; and so did ``scenario``, set when the trial
ran plain code (a ``@concurrency_test``) rather than a tracker.

Free mode is called ``free`` as on the command line, with its noise probability a
parameter of the configuration; records written before that called it ``noise`` (noise
above 0) or ``no-noise``, and ``decode`` renames them (strategy and ``config_key``), so
a history mixing both reads as one name. A record of a version
this module does not know raises ``UnknownVersionError``: the reports skip it with a
warning rather than guess.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Generic, Literal, TypeVar, cast

import msgspec

from shmstress.reports.decoding import describe_error

SCHEMA_VERSION = 2
"""The version this engine writes; ``decode`` reads it and every earlier one."""
READABLE_VERSIONS = (1, 2)

FREE = "free"
"""Free mode's name, as a mode and as its strategy."""
LEGACY_FREE_STRATEGIES = ("noise", "no-noise")
"""What free mode's strategy was called in records before it was called ``free``."""

Outcome = Literal["violation", "clean", "error"]

NonNegative = Annotated[float, msgspec.Meta(ge=0.0)]
Count = Annotated[int, msgspec.Meta(ge=0)]


class SchemaError(ValueError):
    """A record that does not fit its schema; the message names the field's path."""


class UnknownVersionError(SchemaError):
    """A record of a schema version this reader does not know (``version`` as found)."""

    def __init__(self, version: object) -> None:
        super().__init__(
            f"results schema {version!r} is not one this reader knows "
            f"({', '.join(map(str, READABLE_VERSIONS))})"
        )
        self.version = version


class Violation(msgspec.Struct, kw_only=True, frozen=True):
    """The principal violation: the invariant, its message (the summary line first), where
    it was found (at rest, or while the workers ran) and its integer fields."""

    invariant: str | None = None
    message: str | None = None
    at_rest: bool = False
    fields: dict[str, int] = {}


class Config(msgspec.Struct, kw_only=True, frozen=True):
    """The grid point a trial ran (version 2)."""

    workers: dict[str, Count]
    """Worker processes per role, in the tracker's role order."""
    params: dict[str, int] = {}
    """The tracker's parameters, every one the run resolved (defaults included)."""
    noise: NonNegative
    noise_policy: str | None = None
    """Free mode's noise policy (uniform, aimed); absent from records before it existed."""
    mode: str | None = None
    strategy: str
    duration: float | None = None
    executions: int | None = None


class ConfigV1(msgspec.Struct, kw_only=True, frozen=True):
    """A version-1 config, as far as it is generic (see the module docstring for the rest)."""

    roles: dict[str, Count]
    params: dict[str, int] = msgspec.field(default_factory=dict)
    noise: NonNegative
    mode: str | None = None
    strategy: str
    duration: float | None = None
    executions: int | None = None


C = TypeVar("C", Config, ConfigV1)


class Record(msgspec.Struct, Generic[C], kw_only=True, frozen=True):
    """One trial. ``Record[Config]`` is version 2; ``Record[ConfigV1]`` is only met on the
    way to it, inside ``decode``."""

    schema: int = SCHEMA_VERSION
    campaign: str
    started_at: str | None = None
    trial: int | None = None
    tracker: str
    variant: str
    config: C
    config_key: str
    scenario: str | None = None
    """The plain-code scenario (``FILE:function``) the trial ran, when it ran one rather
    than a tracker: ``tracker`` then names its file and ``variant`` its function, so a
    file of ``@concurrency_test`` tests reads like a tracker's variants. Absent from
    tracker records and from records written before scenarios were recorded."""
    seed: int | None = None
    outcome: Outcome
    exit_reason: str | None = None
    time_to_violation_s: NonNegative | None = None
    points_to_violation: int | None = None
    """The points taken up to the one the violation was found at: that point's number, as
    the run printed it (``at point N``, from 1). Records written before the steps were
    numbered from 1 hold one less (the point's index): a count off by one, which no
    reader misreads."""
    time_to_violation_after_startup_s: NonNegative | None = None
    """From the end of the start-up transient (every worker past its first step); 0: the
    violation came during it. A run's start-up flatters a time from run start."""
    startup_s: NonNegative | None = None
    interleaving_coverage: Count | None = None
    """Distinct conflicting (location, location) pairs two workers took in that order on
    one object: how much of the races a run exercised, clean or not."""
    targeted_pairs: Count | None = None
    """Near-miss pairs aimed noise delayed at (absent under another policy)."""
    learnt_pairs: Count | None = None
    """Of those, the pairs earlier runs of the configuration had learnt (saved learning)."""
    points: int | None = None
    points_per_s: float | None = None
    elapsed_s: float | None = None
    violation: Violation | None = None
    bundle: str | None = None
    """The repro bundle, relative to the directory of the results file."""
    log_snippet: str | None = None
    explanation: str | None = None
    swimlane: str | None = None
    """The failure's swimlane picture (SVG), relative to the directory of the results file."""
    replay_command: str | None = None
    rerun_command: str | None = None
    artifact_problems: list[str] = []
    host: str | None = None
    runner: str | None = None
    shmstress_version: str | None = None
    python_version: str | None = None
    code_commit: str | None = None
    """``git rev-parse HEAD`` of the code under test; absent outside a git checkout."""


# --------------------------------------------------------------------------- reading


def parse_json(raw: bytes) -> object:
    """One line as JSON values. msgspec first; Python's json for what it alone accepts
    (``NaN``, ``Infinity``), as earlier readers did. Raises ``ValueError`` otherwise."""
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        pass
    except RecursionError:  # nested too deep for any record: Python's json gives up too
        raise ValueError("nested too deep") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(str(exc)) from exc
    except json.JSONDecodeError as exc:
        raise ValueError(exc.msg) from exc


def schema_version(obj: Mapping[str, object]) -> object:
    """The ``schema`` a record declares; version 1 declared none."""
    return obj.get("schema", 1)


def decode(obj: object) -> Record[Config]:
    """A decoded JSON value as a version-2 record (upgraded if it was version 1).

    Raises ``UnknownVersionError`` for a version this reader does not know, and
    ``SchemaError`` naming the field for anything else that does not fit.
    """
    if not isinstance(obj, dict):
        raise SchemaError(f"expected a JSON object, got {type(obj).__name__}")
    version = schema_version(obj)
    record: Record[Config]
    if type(version) is not int:  # not even a bool or 2.0
        raise UnknownVersionError(version)
    if version == SCHEMA_VERSION:
        record = _convert(obj, Record[Config])
    elif version == 1:
        record = _upgrade(_convert(obj, Record[ConfigV1]))
    else:
        raise UnknownVersionError(version)
    for name, value in (("config.noise", record.config.noise),
                        ("time_to_violation_s", record.time_to_violation_s)):
        if value is not None and not math.isfinite(value):
            raise SchemaError(f"field {name}: Expected a finite number, got {value!r}")
    return _one_free_name(record)


def _one_free_name(record: Record[Config]) -> Record[Config]:
    """A record of free mode under its old names (``noise``, ``no-noise``) as ``free``."""
    config = record.config
    if config.strategy not in LEGACY_FREE_STRATEGIES or config.mode not in (FREE, None):
        return record
    key = record.config_key.replace(f" {FREE}/{config.strategy} ", f" {FREE} ")
    return msgspec.structs.replace(
        record, config=msgspec.structs.replace(config, strategy=FREE, mode=FREE),
        config_key=key)


def _convert(obj: object, kind: Any) -> Any:
    try:
        return msgspec.convert(obj, kind)
    except msgspec.ValidationError as exc:
        raise SchemaError(describe_error(exc, obj, kind)) from None


def _upgrade(record: Record[ConfigV1]) -> Record[Config]:
    old = record.config
    config = Config(
        workers=dict(old.roles), params=dict(old.params), noise=old.noise, mode=old.mode,
        strategy=old.strategy, duration=old.duration, executions=old.executions,
    )
    return cast(Record[Config], msgspec.structs.replace(record, schema=SCHEMA_VERSION,
                                                        config=config))


# --------------------------------------------------------------------------- labels


def role_abbreviations(roles: Sequence[str]) -> dict[str, str]:
    """A role's initial when the roles' initials are unambiguous, else its name and ``=``:
    how ``config_key`` names workers."""
    initials = [role[:1] for role in roles]
    if len(set(initials)) == len(initials):
        return {role: role[:1] for role in roles}
    return {role: f"{role}=" for role in roles}


def drive_label(strategy: str, mode: str | None, noise: float) -> str:
    """What drove a configuration's interleavings, as charts name it: a controlled
    strategy (``pct``), or free mode with its noise probability (``free p=0.1``)."""
    return f"{FREE} p={noise:g}" if FREE in (mode, strategy) else strategy


def workers_label(workers: Sequence[tuple[str, int]]) -> str:
    """``x2 y1``: the workers as ``config_key`` names them."""
    short = role_abbreviations([role for role, _ in workers])
    return " ".join(f"{short[role]}{n}" for role, n in workers)
