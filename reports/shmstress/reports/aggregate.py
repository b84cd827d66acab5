"""Cross-trial views the report needs besides per-configuration stats.

Distinct failures: fifty trials hitting the same bug should read as one bug seen fifty
times, with one replay command to chase it, not fifty near-identical sections.
Trend: nightly campaigns ordered by when they ran, one failure rate per variant each.
Detection: how soon each strategy found a violation, among the variants it could find.
Provenance: what each campaign ran (shmstress, Python, hosts, the commit under test), and
which failures are new since the campaign before the latest, the question a nightly
reader opens the report with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from shmstress.reports.results import Trial
from shmstress.reports.wilson import wilson_interval


@dataclass(frozen=True)
class FailureGroup:
    """Violations judged to be the same bug: the same variant's same invariant, broken in the
    same place (at rest, or while the workers ran). Grouped by that data, never by text."""

    tracker: str
    variant: str
    invariant: str
    at_rest: bool
    message_first_line: str  # the representative's: the invariant's summary
    count: int
    representative: Trial
    config_counts: tuple[tuple[str, int], ...]
    campaigns: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str, str, bool]:
        """What makes two violations the same bug (see the class docstring)."""
        return (self.tracker, self.variant, self.invariant, self.at_rest)


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
    # The quickest reproduction is the cheapest to replay and debug; prefer trials whose
    # bundle is at hand (history may outlive old bundles), then any with a replay command.
    bundle = trial.bundle_file
    return (
        0 if bundle is not None and bundle.is_file() else 1 if trial.replay_command else 2,
        float(trial.points_to_violation) if trial.points_to_violation is not None else 1e300,
        trial.time_to_violation_s if trial.time_to_violation_s is not None else 1e300,
        str(trial.source),
        trial.line,
    )


def group_failures(trials: Iterable[Trial]) -> list[FailureGroup]:
    """Distinct failures, most frequent first."""
    buckets: dict[tuple[str, str, str, bool], list[Trial]] = {}
    for trial in trials:
        if trial.outcome != "violation":
            continue
        violation = trial.violation
        invariant = violation.invariant if violation is not None else "(not recorded)"
        at_rest = violation.at_rest if violation is not None else False
        buckets.setdefault((trial.tracker, trial.variant, invariant, at_rest), []).append(trial)

    groups: list[FailureGroup] = []
    for (tracker, variant, invariant, at_rest), members in buckets.items():
        representative = min(members, key=_representative_key)
        first_line = (representative.violation.first_line
                      if representative.violation is not None else "")
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
                at_rest=at_rest,
                message_first_line=first_line,
                count=len(members),
                representative=representative,
                config_counts=tuple(sorted(per_config.items(), key=lambda kv: (-kv[1], kv[0]))),
                campaigns=tuple(campaigns),
            )
        )
    groups.sort(key=lambda g: (-g.count, g.tracker, g.variant, g.invariant, g.at_rest))
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


@dataclass(frozen=True)
class DetectionCurve:
    """One strategy's detection times, over the trials that could have detected something.

    ``strategy`` is what drove the trials as the charts name it (``pct``, ``free p=0.1``).
    ``detections`` counts every trial that found a violation, timed or not, so the curve's
    label says what the failure-rate chart and the table say; ``times`` are the recorded
    ones (a record may lack one), which the curve draws."""

    strategy: str
    times: tuple[float, ...]  # sorted seconds to the first violation, one per timed detection
    trials: int  # trials with a verdict of the variants that failed at least once
    detections: int  # of those, the trials that found a violation

    @property
    def rate(self) -> float:
        return self.detections / self.trials if self.trials else 0.0


def failing_variants(trials: Iterable[Trial]) -> list[str]:
    """Variants (``tracker/variant``) with at least one violation, under any strategy."""
    return sorted({f"{t.tracker}/{t.variant}" for t in trials if t.outcome == "violation"})


def detection_curves(
    trials: Sequence[Trial], failing: Sequence[str] | None = None
) -> list[DetectionCurve]:
    """Per strategy, its detection times over the trials of variants that failed at least once.

    A variant no strategy ever broke (a correct one) gives a strategy nothing to find:
    pooling its trials would lower every plateau and read as a detection rate no
    strategy earned or lost. Over the failing variants the denominator is every trial
    with a verdict, so a fast but unreliable strategy does not look better than a
    slower one that always finds the bug. ``failing``: ``failing_variants(trials)``, if the
    caller has it already.
    """
    failed = set(failing_variants(trials) if failing is None else failing)
    times: dict[str, list[float]] = {}
    totals: dict[str, int] = {}
    detections: dict[str, int] = {}
    for trial in trials:
        if trial.outcome == "error" or f"{trial.tracker}/{trial.variant}" not in failed:
            continue
        strategy = trial.config.drive
        totals[strategy] = totals.get(strategy, 0) + 1
        found = times.setdefault(strategy, [])
        if trial.outcome == "violation":
            detections[strategy] = detections.get(strategy, 0) + 1
            if trial.time_to_violation_s is not None:
                found.append(trial.time_to_violation_s)
    return [
        DetectionCurve(strategy, tuple(sorted(times[strategy])), totals[strategy],
                       detections.get(strategy, 0))
        for strategy in sorted(totals)
    ]


@dataclass(frozen=True)
class CampaignProvenance:
    """What one campaign ran with, as its records say (several values: it ran on several
    hosts, or was resumed with another release); empty where no record says."""

    campaign: str
    started: datetime | None
    trials: int
    failures: int
    shmstress_versions: tuple[str, ...]
    code_commits: tuple[str, ...]
    python_versions: tuple[str, ...]
    hosts: tuple[str, ...]


def campaign_provenance(trials: Sequence[Trial]) -> list[CampaignProvenance]:
    """Per campaign, in the order they ran, what its trials ran with."""
    found: list[CampaignProvenance] = []
    for info in campaign_order(trials):
        members = [t for t in trials if t.campaign == info.campaign]

        def values(of: Callable[[Trial], str | None], among: list[Trial] = members
                   ) -> tuple[str, ...]:
            return tuple(sorted({v for t in among if (v := of(t))}))

        found.append(CampaignProvenance(
            campaign=info.campaign,
            started=info.started,
            trials=len(members),
            failures=sum(1 for t in members if t.outcome == "violation"),
            shmstress_versions=values(lambda t: t.shmstress_version),
            code_commits=values(lambda t: t.code_commit),
            python_versions=values(lambda t: t.python_version),
            hosts=values(lambda t: t.host),
        ))
    return found


@dataclass(frozen=True)
class NewFailures:
    """The distinct failures the latest campaign saw and the one before it did not.

    ``previous`` is None when there is one campaign only: nothing to compare with, so no
    failure is called new."""

    latest: str | None
    previous: str | None
    keys: frozenset[tuple[str, str, str, bool]]

    def is_new(self, group: FailureGroup) -> bool:
        return group.key in self.keys


def new_failures(groups: Sequence[FailureGroup], trials: Sequence[Trial]) -> NewFailures:
    """Which of ``groups`` are new in the latest campaign since the previous one."""
    order = [info.campaign for info in campaign_order(trials)]
    if len(order) < 2:
        return NewFailures(order[-1] if order else None, None, frozenset())
    latest, previous = order[-1], order[-2]
    return NewFailures(latest, previous, frozenset(
        group.key for group in groups
        if latest in group.campaigns and previous not in group.campaigns
    ))
