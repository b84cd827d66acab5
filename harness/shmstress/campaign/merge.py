"""Merging the directories of a campaign's shards (or of campaigns run one per host) into one.

Each shard of a CI matrix writes its own campaign directory; ``merge`` gathers their
records into ``OUT/results.jsonl`` after whatever history that file already holds, and
copies the bundles and swimlanes the records name to the same relative paths under OUT,
so every record's ``bundle`` and ``replay_command`` still work from there. A sharded
campaign's grid is saved in OUT whole: ``shmstress campaign --out OUT --resume`` then
runs exactly the trials no shard recorded (a job that died) with their own seeds.

Nothing is trusted to be consistent: a record met twice (a shard passed twice, or merged
into a history that already holds it) or two records of one trial of a grid (two shards
that overlap, or ran different seeds under one campaign ID) are refused in one line
before anything is written, as are directories whose campaign.json give one campaign ID
two different grids. Files are written whole (temporary file and rename), never over
something that is not a regular file; a bundle already in OUT with other content is a
conflict, never replaced.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path, PurePosixPath

from shmstress.campaign.grid import GridSpec, every_trial
from shmstress.campaign.results_file import ResultsFile
from shmstress.campaign.runner import (
    RESULTS_FILE,
    STATE_FILE,
    campaign_outcomes,
    resume_spec,
    save_spec,
    unexpected_violations,
)
from shmstress.core.errors import ConfigError
from shmstress.core.files import write_bytes_atomically
from shmstress.core.shard import WHOLE

_ARTIFACT_FIELDS = ("bundle", "swimlane")
"""Record fields naming a file relative to the directory of results.jsonl."""


@dataclass(frozen=True)
class CampaignTally:
    """One grid's campaign as the merged file holds it."""

    spec: GridSpec  # whole: every shard's trials
    recorded: int
    expected: int
    outcomes: dict[str, int]
    unexpected_violations: tuple[str, ...] = ()

    @property
    def missing(self) -> int:
        return self.expected - self.recorded


@dataclass(frozen=True)
class MergeSummary:
    results: Path
    sources: int
    added: int  # records the sources brought
    artifacts: int  # bundles and swimlanes copied into OUT
    campaigns: tuple[CampaignTally, ...]  # the grids of the sources
    warnings: tuple[str, ...] = ()
    saved_grid: Path | None = None  # OUT/campaign.json, when the sources ran one grid


@dataclass
class _Plan:
    """What the merge will write, gathered and checked before anything is."""

    lines: list[bytes] = field(default_factory=list)
    records: list[dict[str, object]] = field(default_factory=list)  # history + new
    artifacts: dict[Path, bytes] = field(default_factory=dict)  # to write, by path in OUT
    warnings: list[str] = field(default_factory=list)
    seen: dict[str, Path] = field(default_factory=dict)  # a record's content: where it was
    trials: dict[tuple[str, str, int], Path] = field(default_factory=dict)  # where recorded
    present: set[Path] = field(default_factory=set)  # artifacts OUT holds already, the same


def _identity(record: Mapping[str, object]) -> str:
    return json.dumps(record, sort_keys=True, ensure_ascii=False, default=str)


def _grids(sources: Sequence[Path]) -> dict[str, GridSpec]:
    """Each campaign's whole grid from the sources' campaign.json; one ID, one grid."""
    grids: dict[str, tuple[GridSpec, Path]] = {}
    for source in sources:
        if not (source / STATE_FILE).exists():
            continue
        spec = resume_spec(source)
        whole = replace(spec, shard=WHOLE)
        known = grids.setdefault(spec.campaign, (whole, source))
        if known[0] != whole:
            differs = next(f.name for f in fields(GridSpec)
                           if getattr(known[0], f.name) != getattr(whole, f.name))
            raise ConfigError(
                f"{known[1]} and {source} hold campaign {spec.campaign} with different grids "
                f"({differs} {getattr(known[0], differs)!r} vs {getattr(whole, differs)!r}): "
                "every shard must run the same grid (same options, --seed and --campaign-id)")
    return {campaign: spec for campaign, (spec, _) in grids.items()}


def _relative(text: object) -> PurePosixPath | None:
    """A record's artifact path, if it stays beneath its directory (as the report reads it)."""
    if not isinstance(text, str) or not text:
        return None
    path = PurePosixPath(text)
    if path.is_absolute() or ".." in path.parts:
        return None
    return path


def _note(plan: _Plan, record: Mapping[str, object], where: Path) -> None:
    """Note a record of OUT's history as held, unjudged: the history is what it is (the
    report reads a record appended twice as one); what is merged into it is judged."""
    plan.seen.setdefault(_identity(record), where)
    campaign, key, trial = record.get("campaign"), record.get("config_key"), record.get("trial")
    if isinstance(campaign, str) and isinstance(key, str) and isinstance(trial, int):
        plan.trials.setdefault((campaign, key, trial), where)


def _check(plan: _Plan, record: Mapping[str, object], where: Path,
           seeds: Mapping[str, Mapping[tuple[str, int], int]]) -> None:
    """Refuse ``record`` if the plan holds it already, or another record of its trial, or if
    its grid gives its trial another seed (or no such trial); else note it as held."""
    identity = _identity(record)
    if identity in plan.seen:
        raise ConfigError(
            f"{where} repeats a record of {plan.seen[identity]} (campaign "
            f"{record.get('campaign')}, {record.get('config_key')} trial "
            f"{record.get('trial')}): merge each shard once, and each night once")
    plan.seen[identity] = where
    campaign, key, trial = record.get("campaign"), record.get("config_key"), record.get("trial")
    if not (isinstance(campaign, str) and campaign in seeds and isinstance(key, str)
            and isinstance(trial, int)):
        return  # no grid says what it should be: a pytest session's, an older campaign's
    expected = seeds[campaign].get((key, trial))
    if expected is None or record.get("seed") != expected:
        what = ("is not a trial of its grid" if expected is None else
                f"has seed {record.get('seed')}, its grid gives it {expected}")
        raise ConfigError(f"{where}: trial {trial} of {key} (campaign {campaign}) {what}: "
                          "conflicting records, nothing merged")
    other = plan.trials.get((campaign, key, trial))
    plan.trials[(campaign, key, trial)] = where
    if other is not None:  # the same record would have been refused above as met twice
        raise ConfigError(f"{other} and {where} both record trial {trial} of {key} "
                          f"(campaign {campaign}): conflicting records, nothing merged")


def _take(plan: _Plan, out_dir: Path, source: Path,
          seeds: Mapping[str, Mapping[tuple[str, int], int]]) -> None:
    """Check every record of ``source`` against what the plan holds, and add it."""
    results = ResultsFile(source / RESULTS_FILE)
    records = results.records()
    plan.warnings += results.warnings
    for record in records:
        _check(plan, record, results.path, seeds)
        for name in _ARTIFACT_FIELDS:
            relative = _relative(record.get(name))
            if relative is not None:
                _plan_artifact(plan, out_dir / relative, source / relative)
        # as ResultsFile.append writes a line
        plan.lines.append((json.dumps(record, ensure_ascii=False, default=str) + "\n").encode())
        plan.records.append(record)


def _plan_artifact(plan: _Plan, target: Path, origin: Path) -> None:
    if target in plan.artifacts or target in plan.present:
        return
    try:
        data = origin.read_bytes() if origin.is_file() and not origin.is_symlink() else None
    except OSError as exc:
        raise ConfigError(f"cannot read {origin}: {exc.strerror}") from exc
    if data is None:
        plan.warnings.append(f"{origin}: named by a record but not a file there; the merged "
                             "record names it all the same")
        return
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise ConfigError(f"cannot merge {origin}: {target} exists and is not a regular file")
    if target.exists():
        if target.read_bytes() != data:
            raise ConfigError(f"{origin} and {target} differ: conflicting artifacts, nothing "
                              "merged")
        plan.present.add(target)  # merged before: the same file
        return
    plan.artifacts[target] = data


def merge(out_dir: Path, sources: Sequence[Path]) -> MergeSummary:
    """Merge the campaign directories ``sources`` into ``out_dir`` (see the module doc)."""
    out_dir = Path(out_dir)
    for source in sources:
        if not source.is_dir():
            raise ConfigError(f"no such campaign directory: {source}")
        if source.resolve() == out_dir.resolve():
            raise ConfigError(f"{source} is the output directory: merge into another one")
        if not (source / RESULTS_FILE).exists() and not (source / STATE_FILE).exists():
            raise ConfigError(f"{source} is not a campaign directory: it holds neither "
                              f"{RESULTS_FILE} nor {STATE_FILE}")
    grids = _grids(sources)
    seeds = {campaign: {t.trial_id: t.seed for t in every_trial(spec)}
             for campaign, spec in grids.items()}
    plan = _Plan()
    history = ResultsFile(out_dir / RESULTS_FILE)
    try:
        kept = (out_dir / RESULTS_FILE).read_bytes()  # history, every byte of it kept
    except FileNotFoundError:
        kept = b""
    except OSError as exc:
        raise ConfigError(f"cannot read {out_dir / RESULTS_FILE}: {exc.strerror}") from exc
    for record in history.records():  # kept as it is, corrupt lines too
        _note(plan, record, history.path)
        plan.records.append(record)
    plan.warnings += history.warnings
    for source in sources:
        _take(plan, out_dir, source, seeds)
    if kept and not kept.endswith(b"\n"):  # a partial last line a kill left: not a record
        cut = len(kept) - kept.rfind(b"\n") - 1
        kept = kept[:len(kept) - cut]
        plan.warnings.append(f"{history.path}: removed a partial last line ({cut} bytes) left "
                             "by a kill")
    for target, data in plan.artifacts.items():  # bundles first, as a campaign does
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomically(target, data, "the merged artifact", exclusive=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = write_bytes_atomically(out_dir / RESULTS_FILE, b"".join([kept, *plan.lines]),
                                     "the merged results")
    saved = save_spec(next(iter(grids.values())), out_dir) if len(grids) == 1 else None
    return MergeSummary(
        results=results,
        sources=len(sources),
        added=len(plan.lines),
        artifacts=len(plan.artifacts),
        campaigns=tuple(_tally(spec, plan.records) for spec in grids.values()),
        warnings=tuple(plan.warnings),
        saved_grid=saved,
    )


def _tally(spec: GridSpec, records: Sequence[Mapping[str, object]]) -> CampaignTally:
    outcomes = campaign_outcomes(spec.campaign, records)
    return CampaignTally(spec=spec, recorded=sum(outcomes.values()),
                         expected=len(every_trial(spec)), outcomes=outcomes,
                         unexpected_violations=unexpected_violations(spec, records))
