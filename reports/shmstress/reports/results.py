"""Read campaign ``results.jsonl`` files and aggregate trials per configuration.

Only reads: the harness owns the format, so unknown keys are ignored (newer harnesses
may add fields) while the handful of fields the report depends on are type-checked
with an error naming file and line, because a silently mis-parsed trial would skew a
failure rate that people use to decide whether a fix worked.

A failing trial's ``bundle`` is a path relative to the directory of its results file
(absolute paths are kept as they are), and its ``replay_command`` replays it from that
directory; ``rerun_command`` reruns the configuration with the trial's seed.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NoReturn, cast

from shmstress.reports.wilson import wilson_interval

Outcome = Literal["violation", "clean", "error"]
OUTCOMES: tuple[Outcome, ...] = ("violation", "clean", "error")


class ResultsFormatError(ValueError):
    """A results.jsonl line that cannot be trusted as a trial record."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


@dataclass(frozen=True)
class TrialConfig:
    """The grid point a trial ran; only the knobs the report groups or labels by."""

    binders: int
    informers: int
    gatherers: int
    noise: float
    strategy: str
    mode: str | None = None
    nodes: int | None = None
    devices_per_node: int | None = None
    duration: float | None = None
    executions: int | None = None
    roles: tuple[tuple[str, int], ...] = ()
    """Worker count per role, for trackers whose roles are not binder/informer/gatherer."""

    @property
    def workers(self) -> int:
        """Total worker processes; contention scales with this, not with the role mix."""
        if self.roles:
            return sum(n for _, n in self.roles)
        return self.binders + self.informers + self.gatherers


@dataclass(frozen=True)
class Violation:
    """The first invariant a trial saw broken."""

    invariant: str
    message: str

    @property
    def first_line(self) -> str:
        """Messages carry per-trial details on later lines; the first line identifies the bug."""
        lines = self.message.strip().splitlines()
        return lines[0].strip() if lines else ""


@dataclass(frozen=True)
class Trial:
    """One line of results.jsonl, plus where it came from for error messages."""

    campaign: str
    tracker: str
    variant: str
    config: TrialConfig
    config_key: str
    outcome: Outcome
    source: Path
    line: int
    started_at: str | None = None
    trial: int | None = None
    seed: int | None = None
    exit_reason: str | None = None
    time_to_violation_s: float | None = None
    points_to_violation: int | None = None
    points: int | None = None
    points_per_s: float | None = None
    elapsed_s: float | None = None
    violation: Violation | None = None
    bundle: str | None = None
    log_snippet: str | None = None
    explanation: str | None = None
    replay_command: str | None = None
    rerun_command: str | None = None

    @property
    def bundle_file(self) -> Path | None:
        """Where the bundle should be: paths in a results file are relative to its directory."""
        return self.source.parent / self.bundle if self.bundle else None


@dataclass(frozen=True)
class LoadedResults:
    """Trials from one or more files, and what was skipped on the way."""

    trials: tuple[Trial, ...]
    skipped_lines: int
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class ConfigStats:
    """Failure statistics for one configuration (pooled over every campaign loaded).

    ``trials`` counts only trials with a verdict (violation or clean); errored trials say
    nothing about the tracker, so they are reported in ``errors`` and kept out of the rate.
    """

    config_key: str
    tracker: str
    variant: str
    workers: int
    strategy: str
    noise: float
    mode: str | None
    trials: int
    failures: int
    errors: int
    rate: float
    wilson_low: float
    wilson_high: float
    median_time_to_violation_s: float | None
    max_time_to_violation_s: float | None


# --------------------------------------------------------------------------- parsing


class _Fields:
    """Typed accessors over one JSON object that raise errors naming file, line and key."""

    def __init__(self, obj: Mapping[str, object], path: Path, line: int, prefix: str = "") -> None:
        self._obj = obj
        self._path = path
        self._line = line
        self._prefix = prefix

    def _fail(self, key: str, expected: str, value: object) -> NoReturn:
        raise ResultsFormatError(
            self._path, self._line, f"field {self._prefix}{key} must be {expected}, got {value!r}"
        )

    def _get(self, key: str, required: bool) -> object:
        if key not in self._obj:
            if required:
                raise ResultsFormatError(
                    self._path, self._line, f"missing required field {self._prefix}{key}"
                )
            return None
        value = self._obj[key]
        if value is None and required:
            self._fail(key, "present (not null)", value)
        return value

    def _str(self, key: str, required: bool) -> str | None:
        value = self._get(key, required)
        if value is None or isinstance(value, str):
            return value
        self._fail(key, "a string", value)

    def _int(self, key: str, required: bool) -> int | None:
        value = self._get(key, required)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self._fail(key, "an integer", value)
        return value

    def _float(self, key: str, required: bool, non_negative: bool = False) -> float | None:
        value = self._get(key, required)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self._fail(key, "a number", value)
        number = float(value)
        if non_negative and not (math.isfinite(number) and number >= 0):
            self._fail(key, "a finite number >= 0", value)
        return number

    def opt_str(self, key: str) -> str | None:
        return self._str(key, required=False)

    def req_str(self, key: str) -> str:
        value = self._str(key, required=True)
        return "" if value is None else value

    def opt_int(self, key: str) -> int | None:
        return self._int(key, required=False)

    def req_int(self, key: str) -> int:
        value = self._int(key, required=True)
        return 0 if value is None else value

    def opt_float(self, key: str, non_negative: bool = False) -> float | None:
        return self._float(key, required=False, non_negative=non_negative)

    def req_float(self, key: str, non_negative: bool = False) -> float:
        value = self._float(key, required=True, non_negative=non_negative)
        return 0.0 if value is None else value

    def int_map(self, key: str) -> tuple[tuple[str, int], ...]:
        """An optional object of integers, e.g. ``config.roles``."""
        fields = self.object(key, required=False)
        if fields is None:
            return ()
        return tuple((name, fields.req_int(name)) for name in fields._obj)

    def object(self, key: str, required: bool) -> _Fields | None:
        value = self._get(key, required)
        if value is None:
            return None
        if not isinstance(value, dict):
            self._fail(key, "an object", value)
        return _Fields(cast(dict[str, object], value), self._path, self._line, f"{key}.")


def parse_trial(obj: object, source: Path, line: int) -> Trial:
    """Turn one decoded JSON value into a Trial, or raise ResultsFormatError."""
    if not isinstance(obj, dict):
        raise ResultsFormatError(source, line, f"expected a JSON object, got {type(obj).__name__}")
    f = _Fields(cast(dict[str, object], obj), source, line)

    outcome = f.req_str("outcome")
    if outcome not in OUTCOMES:
        raise ResultsFormatError(
            source, line, f"field outcome must be one of {list(OUTCOMES)}, got {outcome!r}"
        )

    cfg_fields = f.object("config", required=True)
    if cfg_fields is None:  # unreachable: required=True raises instead
        raise ResultsFormatError(source, line, "missing required field config")
    config = TrialConfig(
        binders=cfg_fields.req_int("binders"),
        informers=cfg_fields.req_int("informers"),
        gatherers=cfg_fields.req_int("gatherers"),
        noise=cfg_fields.req_float("noise", non_negative=True),
        strategy=cfg_fields.req_str("strategy"),
        mode=cfg_fields.opt_str("mode"),
        nodes=cfg_fields.opt_int("nodes"),
        devices_per_node=cfg_fields.opt_int("devices_per_node"),
        duration=cfg_fields.opt_float("duration"),
        executions=cfg_fields.opt_int("executions"),
        roles=cfg_fields.int_map("roles"),
    )

    violation: Violation | None = None
    vio_fields = f.object("violation", required=False)
    if vio_fields is not None:
        violation = Violation(
            invariant=vio_fields.opt_str("invariant") or "(unnamed invariant)",
            message=vio_fields.opt_str("message") or "",
        )

    return Trial(
        campaign=f.req_str("campaign"),
        tracker=f.req_str("tracker"),
        variant=f.req_str("variant"),
        config=config,
        config_key=f.req_str("config_key"),
        outcome=outcome,
        source=source,
        line=line,
        started_at=f.opt_str("started_at"),
        trial=f.opt_int("trial"),
        seed=f.opt_int("seed"),
        exit_reason=f.opt_str("exit_reason"),
        time_to_violation_s=f.opt_float("time_to_violation_s", non_negative=True),
        points_to_violation=f.opt_int("points_to_violation"),
        points=f.opt_int("points"),
        points_per_s=f.opt_float("points_per_s"),
        elapsed_s=f.opt_float("elapsed_s"),
        violation=violation,
        bundle=f.opt_str("bundle"),
        log_snippet=f.opt_str("log_snippet"),
        explanation=f.opt_str("explanation"),
        replay_command=f.opt_str("replay_command"),
        rerun_command=f.opt_str("rerun_command"),
    )


def load_results_file(path: Path) -> LoadedResults:
    """Parse one results.jsonl.

    A campaign killed mid-write leaves a partial final line; that one line is skipped and
    reported instead of failing the whole report.  Any other undecodable line is an error:
    results are appended in order, so damage in the middle means the file is not trustworthy.
    """
    path = Path(path)
    raw_lines = path.read_bytes().split(b"\n")
    last_content = max((i for i, raw in enumerate(raw_lines) if raw.strip()), default=-1)

    trials: list[Trial] = []
    warnings: list[str] = []
    skipped = 0
    for index, raw in enumerate(raw_lines):
        if not raw.strip():
            continue
        lineno = index + 1
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if index == last_content:
                skipped += 1
                warnings.append(
                    f"{path}:{lineno}: skipped truncated last line ({len(raw)} bytes); "
                    "the campaign was probably interrupted while writing it"
                )
                continue
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise ResultsFormatError(path, lineno, f"invalid JSON: {detail}") from exc
        trials.append(parse_trial(obj, path, lineno))
    return LoadedResults(tuple(trials), skipped, tuple(warnings))


def load_results(paths: Iterable[Path]) -> LoadedResults:
    """Parse several results files (e.g. one per nightly campaign) into one trial list."""
    trials: list[Trial] = []
    warnings: list[str] = []
    skipped = 0
    seen: set[Path] = set()
    for path in paths:
        # The same file passed twice (a shell glob plus an explicit name) would double every
        # count and make the Wilson intervals look tighter than the evidence allows.
        resolved = Path(path).resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        loaded = load_results_file(Path(path))
        trials.extend(loaded.trials)
        warnings.extend(loaded.warnings)
        skipped += loaded.skipped_lines
    return LoadedResults(tuple(trials), skipped, tuple(warnings))


# --------------------------------------------------------------------------- grouping


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def config_stats(trials: Sequence[Trial]) -> ConfigStats:
    """Aggregate trials that share one config_key."""
    if not trials:
        raise ValueError("config_stats needs at least one trial")
    first = trials[0]
    failures = sum(1 for t in trials if t.outcome == "violation")
    errors = sum(1 for t in trials if t.outcome == "error")
    decided = len(trials) - errors
    low, high = wilson_interval(failures, decided)
    times = [
        t.time_to_violation_s
        for t in trials
        if t.outcome == "violation" and t.time_to_violation_s is not None
    ]
    return ConfigStats(
        config_key=first.config_key,
        tracker=first.tracker,
        variant=first.variant,
        workers=first.config.workers,
        strategy=first.config.strategy,
        noise=first.config.noise,
        mode=first.config.mode,
        trials=decided,
        failures=failures,
        errors=errors,
        rate=failures / decided if decided else 0.0,
        wilson_low=low,
        wilson_high=high,
        median_time_to_violation_s=_median(times),
        max_time_to_violation_s=max(times) if times else None,
    )


def group_by_config(trials: Iterable[Trial]) -> list[ConfigStats]:
    """One ConfigStats per config_key, ordered so related configurations sit together."""
    buckets: dict[str, list[Trial]] = {}
    for trial in trials:
        buckets.setdefault(trial.config_key, []).append(trial)
    stats = [config_stats(bucket) for bucket in buckets.values()]
    stats.sort(key=lambda s: (s.tracker, s.variant, s.workers, s.strategy, s.noise, s.config_key))
    return stats
