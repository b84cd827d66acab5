"""The repro bundle's JSON layout as msgspec Structs: one description for writing and reading.

``bundle.to_json`` builds a ``BundleDoc`` and ``bundle.from_json`` decodes into one, so
the writer and the reader cannot drift apart. msgspec checks every type on the way in
(an ``int`` is never a ``bool``, a count map holds integers only) and names where a value
went wrong; ``decode`` turns that into one ``BundleError`` line naming the field's path,
e.g. ``field config.counts.clerk: Expected `int`, got `str```.

Only the layout is checked here; ``from_json`` checks what a type cannot say (steps name
existing workers and labels, phase changes ascend). The header (``format`` and
``format_version``) is checked before the body, so a bundle of another format version is
refused by its version, not by whichever field happens to differ.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from shmstress.controlled.strategies import SPECS, StrategySpec, spec_named
from shmstress.core.errors import BundleError, ConfigError
from shmstress.reports.decoding import describe_error

Mode = Literal["free", "controlled"]


class NoiseDoc(msgspec.Struct, kw_only=True):
    probability: float
    kinds: list[str]
    max_sleep_us: float
    policy: str | msgspec.UnsetType = msgspec.UNSET  # absent: uniform (as every bundle was
    # before aimed noise), and left out when uniform, so such a bundle reads byte for byte;
    # left out without noise too (probability 0), where no policy matters


class ConfigDoc(msgspec.Struct, kw_only=True):
    counts: dict[str, int]
    params: dict[str, int]
    checks: list[str] | None = None
    noise: NoiseDoc


class StrategyDoc(msgspec.Struct, kw_only=True):
    """Each strategy stores only its own knobs: ``pct`` its depth and spin, ``exhaustive``
    its bound, ``portfolio`` the member that found the failure; an unset knob is left out
    of the file and takes StrategySpec's default."""

    name: str
    depth: int | msgspec.UnsetType = msgspec.UNSET
    spin: str | msgspec.UnsetType = msgspec.UNSET
    bound: int | msgspec.UnsetType = msgspec.UNSET
    member: str | msgspec.UnsetType = msgspec.UNSET


class ViolationDoc(msgspec.Struct, kw_only=True):
    invariant: str
    fields: dict[str, int]
    message: str = ""
    worker: int | None = None
    at_rest: bool = False


class BundleDoc(msgspec.Struct, kw_only=True):
    """Format version 2, field for field in the order the file has always had. Version 2
    numbers ``execution`` from 1, as the commands print it; version 1 (read too) numbered it
    from 0, and was otherwise the same."""

    format: str
    format_version: int
    shmstress_version: str = "unknown"
    # Added within version 1, left out when unknown, so an older bundle is written again as
    # it was (but for its version and execution) and an older reader ignores them: which
    # failure this is (the name and the log's header carry it) and what found it (see
    # ``core.provenance``).
    id: str | msgspec.UnsetType = msgspec.UNSET
    python_version: str | msgspec.UnsetType = msgspec.UNSET
    host: str | msgspec.UnsetType = msgspec.UNSET
    code_commit: str | msgspec.UnsetType = msgspec.UNSET
    # The sha256 of the tracker's file when it is loaded by path (``bundle_code``): a replay
    # refuses a file that changed since. Left out for an installed tracker.
    code_sha256: str | msgspec.UnsetType = msgspec.UNSET
    tracker: str
    variant: str
    config: ConfigDoc
    seed: int
    execution_seed: int
    # The failing execution of a controlled run, numbered from 1 as printed ("first failure:
    # execution 4", the bundle's name "-e4"); null for a free run.
    execution: int | None = None
    mode: Mode
    strategy: StrategyDoc
    # The steps at which DRAIN, then STOP, began: positions in ``steps`` (from 0, as JSON
    # arrays are; a command prints position + 1 as the step's number)
    phase_changes: list[int]
    preemptions: int | None = None
    violation: ViolationDoc
    # A bundle found from a real log (``shmstress import-log``): each object of the model
    # (its name as the tracker's words write it) -> the name the log gave it. Data only.
    names: dict[str, str] | msgspec.UnsetType = msgspec.UNSET
    labels: list[str]
    steps: list[tuple[int, int]]


def strategy_doc(spec: StrategySpec) -> StrategyDoc:
    """What a bundle stores of ``spec``: its name and its own knobs (an empty one, the
    portfolio's member outside a failure, left out)."""
    knobs = {knob: value for knob, value in spec.knobs().items() if value != ""}
    return msgspec.convert({"name": spec.name, **knobs}, StrategyDoc)


def strategy_of(doc: StrategyDoc) -> StrategySpec:
    """The spec ``doc`` stores; one BundleError line for an unknown strategy, a knob it does
    not take, or one out of range."""
    knobs = {knob: getattr(doc, knob) for knob in StrategyDoc.__struct_fields__
             if knob != "name" and getattr(doc, knob) is not msgspec.UNSET}
    if doc.name not in SPECS:
        raise BundleError(f"field strategy.name: unknown strategy {doc.name!r}")
    try:
        return spec_named(doc.name, **knobs)
    except ConfigError as exc:
        raise BundleError(f"field strategy: {exc}") from None


def encode(doc: BundleDoc) -> dict[str, Any]:
    """The bundle as plain JSON values (unset knobs left out), keys in the file's order."""
    data = msgspec.to_builtins(doc)
    assert isinstance(data, dict)
    return data


def decode(data: object) -> BundleDoc:
    """``data`` (decoded JSON) as a BundleDoc, or one BundleError line naming the field."""
    try:
        return msgspec.convert(data, BundleDoc)
    except msgspec.ValidationError as exc:
        raise BundleError(describe_error(exc, data, BundleDoc)) from None


# -- error messages ---------------------------------------------------------------------------
