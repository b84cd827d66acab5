"""Cross-trial views the report needs besides per-configuration stats.

Distinct failures: fifty trials hitting the same bug should read as one bug seen fifty
times, with one replay command to chase it, not fifty near-identical sections.
Trend: nightly campaigns ordered by when they ran, one failure rate per variant each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from reports.results import Trial
from reports.wilson import wilson_interval


@dataclass(frozen=True)
class FailureGroup:
    """Violations judged to be the same bug: same variant, invariant and first message line."""

    tracker: str
    variant: str
    invariant: str
    message_first_line: str
    count: int
    representative: Trial
    config_counts: tuple[tuple[str, int], ...]
    campaigns: tuple[str, ...]


@dataclass(frozen=True)
class CampaignInfo:
    """A campaign and the moment it started, for placing it on the trend's time axis."""

    campaign: str
    started: datetime | None


@dataclass(frozen=True)
class TrendPoint:
    """One variant's pooled failure rate within one campaign."""

    campaign: str
    variant: str
    trials: int
    failures: int
    rate: float
    wilson_low: float
    wilson_high: float


def variant_label(trial: Trial, multiple_trackers: bool) -> str:
    """Variant names are only unique per tracker; prefix the tracker when several are mixed."""
    return f"{trial.tracker}/{trial.variant}" if multiple_trackers else trial.variant


def has_multiple_trackers(trials: Iterable[Trial]) -> bool:
    return len({t.tracker for t in trials}) > 1


def _representative_key(trial: Trial) -> tuple[int, float, float, str, int]:
    # The quickest reproduction is the cheapest to replay and debug; prefer trials that
    # actually carry a replay command.
    return (
        0 if trial.replay_command else 1,
        float(trial.points_to_violation) if trial.points_to_violation is not None else 1e300,
        trial.time_to_violation_s if trial.time_to_violation_s is not None else 1e300,
        str(trial.source),
        trial.line,
    )


def group_failures(trials: Iterable[Trial]) -> list[FailureGroup]:
    """Distinct failures, most frequent first."""
    buckets: dict[tuple[str, str, str, str], list[Trial]] = {}
    for trial in trials:
        if trial.outcome != "violation":
            continue
        if trial.violation is not None:
            invariant, first_line = trial.violation.invariant, trial.violation.first_line
        else:
            invariant, first_line = "(not recorded)", ""
        key = (trial.tracker, trial.variant, invariant, first_line)
        buckets.setdefault(key, []).append(trial)

    groups: list[FailureGroup] = []
    for (tracker, variant, invariant, first_line), members in buckets.items():
        per_config: dict[str, int] = {}
        campaigns: dict[str, None] = {}
        for member in members:
            per_config[member.config_key] = per_config.get(member.config_key, 0) + 1
            campaigns[member.campaign] = None
        groups.append(
            FailureGroup(
                tracker=tracker,
                variant=variant,
                invariant=invariant,
                message_first_line=first_line,
                count=len(members),
                representative=min(members, key=_representative_key),
                config_counts=tuple(sorted(per_config.items(), key=lambda kv: (-kv[1], kv[0]))),
                campaigns=tuple(campaigns),
            )
        )
    groups.sort(key=lambda g: (-g.count, g.tracker, g.variant, g.invariant, g.message_first_line))
    return groups


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    # Naive and aware datetimes cannot be compared; the harness writes UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _time_from_campaign_id(campaign: str) -> datetime | None:
    # Campaign IDs look like "2026-11-22T08:00:00Z-ab12": a start time plus a short suffix.
    head, _, _ = campaign.rpartition("-")
    return _parse_time(head) if head else _parse_time(campaign)


def campaign_order(trials: Iterable[Trial]) -> list[CampaignInfo]:
    """Campaigns in the order they ran: earliest trial start, else the ID's timestamp."""
    earliest: dict[str, datetime | None] = {}
    for trial in trials:
        moment = _parse_time(trial.started_at)
        if trial.campaign not in earliest:
            earliest[trial.campaign] = moment
        elif moment is not None:
            current = earliest[trial.campaign]
            earliest[trial.campaign] = moment if current is None else min(current, moment)
    infos = [
        CampaignInfo(campaign, moment or _time_from_campaign_id(campaign))
        for campaign, moment in earliest.items()
    ]
    far_future = datetime.max.replace(tzinfo=UTC)
    infos.sort(key=lambda c: (c.started or far_future, c.campaign))
    return infos


def trend_by_variant(
    trials: Sequence[Trial], campaigns: Sequence[CampaignInfo] | None = None
) -> dict[str, list[TrendPoint]]:
    """Per variant, its failure rate in each campaign it ran in, in campaign order.

    Rates pool every configuration of the variant in that campaign, so a change to the
    nightly grid shows up as a step too; the per-configuration table is the place to check.
    """
    order = campaigns if campaigns is not None else campaign_order(trials)
    multi = has_multiple_trackers(trials)
    counts: dict[tuple[str, str], list[int]] = {}
    for trial in trials:
        if trial.outcome == "error":
            continue
        tally = counts.setdefault((variant_label(trial, multi), trial.campaign), [0, 0])
        tally[0] += 1
        tally[1] += 1 if trial.outcome == "violation" else 0

    result: dict[str, list[TrendPoint]] = {}
    for variant in sorted({variant for variant, _ in counts}):
        points: list[TrendPoint] = []
        for info in order:
            found = counts.get((variant, info.campaign))
            if found is None:
                continue
            n, k = found
            low, high = wilson_interval(k, n)
            points.append(TrendPoint(info.campaign, variant, n, k, k / n, low, high))
        result[variant] = points
    return result
