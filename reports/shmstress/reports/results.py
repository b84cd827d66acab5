"""Read campaign ``results.jsonl`` files and aggregate trials per configuration.

Only reads: the harness owns the format (``schema.py``), so unknown keys are ignored
(newer harnesses may add fields) while the fields the report depends on are type-checked,
because a silently mis-parsed trial would skew a failure rate that people use to decide
whether a fix worked: a line that does not pass is skipped with a warning naming file, line
and field, and counted in the report, never guessed at and never silently dropped. Records
of every schema version ``schema.py`` knows are read (version 1 upgraded on the way in); a
record of a version it does not know is skipped with a warning, never guessed at.

A violation found at rest (in the state the workers left) was found when the run ended:
a record that left its time out (releases before this one did) gets the run's elapsed
time and points, so every chart and the table count it as a detection, with a time.

A failing trial's ``bundle`` is a path relative to the directory of its results file, and
its ``replay_command`` replays it from that directory; ``rerun_command`` reruns the
configuration with the trial's seed. A path that leaves that directory (absolute, or with
``..``) names nothing the report will read (``files.beneath``).

A record appended twice (a resumed campaign that wrote it again, a history concatenated
with a night it already held) is one trial: ``load_results`` keeps the first and says how
many it dropped. A record's identity is its whole content: two runs never share their
start time, seed, timings and counts, while the campaign's own trial key
(campaign, config_key, trial) is shared by the runs of two pytest tests of one
configuration.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from shmstress.reports.files import RefusedFileError, beneath
from shmstress.reports.schema import (
    READABLE_VERSIONS,
    Config,
    Outcome,
    Record,
    SchemaError,
    UnknownVersionError,
    decode,
    drive_label,
    parse_json,
    workers_label,
)
from shmstress.reports.wilson import wilson_interval


class ResultsFormatError(ValueError):
    """A results.jsonl line that cannot be trusted as a trial record."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


Workers = tuple[tuple[str, int], ...]
"""Worker processes per role, in the tracker's role order."""


@dataclass(frozen=True)
class TrialConfig:
    """The grid point a trial ran; only the knobs the report groups or labels by."""

    workers: Workers
    noise: float
    strategy: str
    mode: str | None = None
    duration: float | None = None
    executions: int | None = None
    params: tuple[tuple[str, int], ...] = ()

    @property
    def worker_count(self) -> int:
        """Total worker processes; contention scales with this, not with the role mix."""
        return sum(n for _, n in self.workers)

    @property
    def workers_label(self) -> str:
        """The workers as the config key names them, e.g. ``x2 y1``."""
        return workers_label(self.workers)

    @property
    def drive(self) -> str:
        """What drove the interleavings: ``pct``, or ``free p=0.1`` (see ``drive_label``)."""
        return drive_label(self.strategy, self.mode, self.noise)


@dataclass(frozen=True)
class Violation:
    """The principal invariant a trial saw broken, and where: at rest or while running."""

    invariant: str
    message: str
    at_rest: bool = False

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
    scenario: str | None = None
    """The plain-code scenario (``FILE:function``) it ran, if it ran no tracker."""
    started_at: str | None = None
    trial: int | None = None
    seed: int | None = None
    exit_reason: str | None = None
    time_to_violation_s: float | None = None
    points_to_violation: int | None = None
    points: int | None = None
    points_per_s: float | None = None
    elapsed_s: float | None = None
    interleaving_coverage: int | None = None
    """Distinct conflicting location pairs the run saw in each order (absent: not recorded)."""
    violation: Violation | None = None
    bundle: str | None = None
    log_snippet: str | None = None
    explanation: str | None = None
    replay_command: str | None = None
    rerun_command: str | None = None
    swimlane: str | None = None
    host: str | None = None
    shmstress_version: str | None = None
    python_version: str | None = None
    code_commit: str | None = None
    identity: bytes = field(default=b"", compare=False, repr=False)
    """A digest of the whole record as written: equal for the same record read twice."""

    @property
    def bundle_file(self) -> Path | None:
        """Where the bundle should be: paths in a results file are relative to its directory
        (None: no bundle, or a path out of that directory)."""
        return _below(self.source, self.bundle)

    @property
    def swimlane_file(self) -> Path | None:
        """Where the swimlane SVG should be, relative to the results file like the bundle."""
        return _below(self.source, self.swimlane)


def _below(results: Path, recorded: str | None) -> Path | None:
    if not recorded:
        return None
    try:
        return results.parent / beneath(recorded)
    except RefusedFileError:
        return None


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
    workers: Workers
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
    timed_failures: int = 0
    """Failures with a recorded time: the times' median and max are over these."""
    coverages: tuple[int, ...] = ()
    """Interleaving coverage of each trial that recorded it (violation or clean, not error):
    how much of the races the configuration exercised, the number a clean run is judged by."""

    @property
    def median_coverage(self) -> float | None:
        return _median(self.coverages)

    @property
    def worker_count(self) -> int:
        """Total worker processes."""
        return sum(n for _, n in self.workers)

    @property
    def drive(self) -> str:
        """What drove the interleavings: ``pct``, or ``free p=0.1`` (see ``drive_label``)."""
        return drive_label(self.strategy, self.mode, self.noise)

    @property
    def workers_label(self) -> str:
        """The workers as the config key names them, e.g. ``x2 y1``."""
        return workers_label(self.workers)


# --------------------------------------------------------------------------- parsing


class UnknownSchemaError(ResultsFormatError):
    """A record of a schema version this reader does not know; files skip it with a warning."""

    def __init__(self, path: Path, line: int, version: object) -> None:
        super().__init__(path, line, str(UnknownVersionError(version)))
        self.version = version


def parse_trial(obj: object, source: Path, line: int) -> Trial:
    """Turn one decoded JSON value into a Trial, or raise ResultsFormatError.

    Raises its subclass UnknownSchemaError for a record of an unknown schema version.
    """
    try:
        record = decode(obj)
    except UnknownVersionError as exc:
        raise UnknownSchemaError(source, line, exc.version) from None
    except SchemaError as exc:
        raise ResultsFormatError(source, line, str(exc)) from None
    return _trial(record, source, line, record_identity(obj))


def record_identity(obj: object) -> bytes:
    """``obj``'s content, whatever the order of its keys or its spacing, as a digest."""
    canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(canonical.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _trial(record: Record[Config], source: Path, line: int, identity: bytes) -> Trial:
    config = record.config
    violation = record.violation
    seconds, points = record.time_to_violation_s, record.points_to_violation
    if record.outcome == "violation" and violation is not None and violation.at_rest:
        # found at rest: when the run ended (older records left both out)
        seconds = seconds if seconds is not None else record.elapsed_s
        points = points if points is not None else record.points
    return Trial(
        campaign=record.campaign,
        tracker=record.tracker,
        variant=record.variant,
        config=TrialConfig(
            workers=tuple(config.workers.items()),
            noise=config.noise,
            strategy=config.strategy,
            mode=config.mode,
            duration=config.duration,
            executions=config.executions,
            params=tuple(config.params.items()),
        ),
        config_key=record.config_key,
        outcome=record.outcome,
        source=source,
        line=line,
        scenario=record.scenario,
        started_at=record.started_at,
        trial=record.trial,
        seed=record.seed,
        exit_reason=record.exit_reason,
        time_to_violation_s=seconds,
        points_to_violation=points,
        points=record.points,
        points_per_s=record.points_per_s,
        elapsed_s=record.elapsed_s,
        interleaving_coverage=record.interleaving_coverage,
        violation=None if violation is None else Violation(
            invariant=violation.invariant or "(unnamed invariant)",
            message=violation.message or "",
            at_rest=violation.at_rest,
        ),
        bundle=record.bundle,
        log_snippet=record.log_snippet,
        explanation=record.explanation,
        replay_command=record.replay_command,
        rerun_command=record.rerun_command,
        swimlane=record.swimlane,
        host=record.host,
        shmstress_version=record.shmstress_version,
        python_version=record.python_version,
        code_commit=record.code_commit,
        identity=identity,
    )


_LISTED = 10
"""Corrupt lines of one file named one by one in the warnings; the rest are counted."""


def load_results_file(path: Path, *, strict: bool = False) -> LoadedResults:
    """Parse one results.jsonl.

    A line that is not a trial record (a partial last line left by a kill, a line damaged
    on disk or in a cache, a record that does not fit the schema) is skipped with a warning
    naming ``file:line`` and counted, never allowed to block a report, a resume or a new
    campaign: one damaged line must not cost a nightly history every night after it.
    ``strict`` raises ``ResultsFormatError`` at the first such line instead.
    """
    path = Path(path)
    raw_lines = path.read_bytes().split(b"\n")
    last_content = max((i for i, raw in enumerate(raw_lines) if raw.strip()), default=-1)

    trials: list[Trial] = []
    warnings: list[str] = []
    corrupt: list[int] = []
    skipped = 0
    for index, raw in enumerate(raw_lines):
        if not raw.strip():
            continue
        lineno = index + 1
        try:
            obj = parse_json(raw)
        except ValueError as exc:
            if index == last_content:
                skipped += 1
                warnings.append(
                    f"{path}:{lineno}: skipped truncated last line ({len(raw)} bytes); "
                    "the campaign was probably interrupted while writing it"
                )
                continue
            if strict:
                raise ResultsFormatError(path, lineno, f"invalid JSON: {exc}") from exc
            skipped += 1
            corrupt.append(lineno)
            if len(corrupt) <= _LISTED:
                warnings.append(f"{path}:{lineno}: skipped a corrupt line (invalid JSON: {exc})")
            continue
        try:
            trials.append(parse_trial(obj, path, lineno))
        except UnknownSchemaError as exc:
            # A newer engine's record: guessing at it could skew a rate, and refusing the
            # whole report would hide every record this reader does understand.
            skipped += 1
            known = " and ".join(str(v) for v in READABLE_VERSIONS)
            warnings.append(
                f"{path}:{lineno}: skipped a record of results schema {exc.version!r}; this "
                f"report reads schemas {known} (a newer shmstress wrote it?)"
            )
        except ResultsFormatError as exc:
            if strict:
                raise
            skipped += 1
            corrupt.append(lineno)
            if len(corrupt) <= _LISTED:
                warnings.append(f"{path}:{lineno}: skipped a corrupt line ({exc.problem})")
    if len(corrupt) > _LISTED:
        more = corrupt[_LISTED:]
        warnings.append(f"{path}: skipped {len(more)} more corrupt lines (lines "
                        f"{', '.join(map(str, more[:20]))}{', ...' if len(more) > 20 else ''})")
    return LoadedResults(tuple(trials), skipped, tuple(warnings))


def load_results(paths: Iterable[Path]) -> LoadedResults:
    """Parse several results files (e.g. one per nightly campaign) into one trial list,
    each record once.

    A record read twice, from the same file passed twice (a shell glob plus an explicit
    name) or written twice, would double its count and make the Wilson intervals look
    tighter than the evidence allows. A file passed twice is read once; a record written
    twice is kept once, with a warning saying how many were dropped.
    """
    trials: list[Trial] = []
    warnings: list[str] = []
    skipped = 0
    seen: set[Path] = set()
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        loaded = load_results_file(Path(path))
        trials.extend(loaded.trials)
        warnings.extend(loaded.warnings)
        skipped += loaded.skipped_lines
    distinct, repeats = _distinct(trials)
    if repeats:
        warnings.append(_repeats_warning(repeats))
    return LoadedResults(tuple(distinct), skipped, tuple(warnings))


def _distinct(trials: Sequence[Trial]) -> tuple[list[Trial], list[tuple[Trial, Trial]]]:
    """The trials, each record's first reading only; and each later reading with the first."""
    first: dict[bytes, Trial] = {}
    repeats: list[tuple[Trial, Trial]] = []
    for trial in trials:
        earlier = first.setdefault(trial.identity, trial)
        if earlier is not trial:
            repeats.append((trial, earlier))
    return list(first.values()), repeats


def _repeats_warning(repeats: Sequence[tuple[Trial, Trial]]) -> str:
    shown = ", ".join(f"{again.source}:{again.line} repeats {earlier.source}:{earlier.line}"
                      for again, earlier in repeats[:_LISTED])
    more = f" and {len(repeats) - _LISTED} more" if len(repeats) > _LISTED else ""
    return (f"dropped {len(repeats)} duplicate record{'s' if len(repeats) != 1 else ''} "
            f"(the same record written again, by a resumed campaign or a merged history): "
            f"{shown}{more}; each trial is counted once")


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
        timed_failures=len(times),
        coverages=tuple(t.interleaving_coverage for t in trials
                        if t.outcome != "error" and t.interleaving_coverage is not None),
    )


def group_by_config(trials: Iterable[Trial]) -> list[ConfigStats]:
    """One ConfigStats per config_key, ordered so related configurations sit together."""
    buckets: dict[str, list[Trial]] = {}
    for trial in trials:
        buckets.setdefault(trial.config_key, []).append(trial)
    stats = [config_stats(bucket) for bucket in buckets.values()]
    stats.sort(
        key=lambda s: (
            s.tracker, s.variant, s.worker_count, s.workers, s.strategy, s.noise, s.config_key
        )
    )
    return stats
