"""A campaign's grid: which configurations it runs, how often, and with which seeds.

The grid is plain data that round-trips through JSON, because three places must
agree on it exactly: an interrupted campaign resumed later, and every host of a
campaign spread over several machines (each host expands the same grid and must
derive the same trials and seeds without talking to the others). A shard (``--shard
I/N``, one CI job of a matrix) expands the whole grid as well and keeps its block of it,
so its trials carry the seeds the unsharded campaign gives them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from shmstress.controlled.options import DEFAULT_RUN_STEPS, ControlledOptions
from shmstress.controlled.strategies import EXPLORING, spec_named
from shmstress.core.config import RunConfig
from shmstress.core.errors import ConfigError
from shmstress.core.noise import NOISE_POLICIES, UNIFORM, NoiseConfig
from shmstress.core.shard import WHOLE, Shard
from shmstress.plugin.tracker import Tracker

FREE = "free"
CONTROLLED = "controlled"
STRATEGIES = (FREE, *EXPLORING)
"""What drives a trial's interleavings: free mode's noise, or a controlled-mode strategy."""
DEFAULT_STRATEGIES = (FREE, "pct", "random_walk")

DEFAULT_NOISES = (0.1, 0.0)
DEFAULT_TRIALS = 5
DEFAULT_DURATION_S = 2.0
DEFAULT_EXECUTIONS = 200
"""Executions a controlled trial may try: random walk catches every DRA race well within."""
MAX_GRID_TRIALS = 100_000
"""Trials in one grid, every configuration's together: at a second or two each, more than
a day of a machine's time, and each is expanded (a few hundred bytes) before the first
runs; a typo like ``--trials 1000000000`` must be refused, not fill the memory."""
MAX_DURATION_S = 86_400.0
"""A free trial's budget: a day (a longer soak is ``shmstress run``'s, not a grid's)."""
MAX_EXECUTIONS = 10_000_000
"""A controlled trial's budget: hours of executions of a few milliseconds each."""


@dataclass(frozen=True)
class GridSpec:
    """Everything that defines a campaign; with ``campaign`` and ``seed`` it is reproducible.

    ``shard`` says which block of it this campaign directory runs; every shard of one
    campaign has the same grid otherwise (``merge`` checks it)."""

    campaign: str
    seed: int
    tracker: str = "dra"
    variants: tuple[str, ...] = ()
    workers: tuple[Mapping[str, int], ...] = ()
    noises: tuple[float, ...] = DEFAULT_NOISES
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    trials: int = DEFAULT_TRIALS
    duration: float = DEFAULT_DURATION_S
    executions: int = DEFAULT_EXECUTIONS
    params: Mapping[str, int] = field(default_factory=dict)
    expect_clean: tuple[str, ...] = ()
    noise_policy: str = NoiseConfig().policy  # of every free trial
    shard: Shard = WHOLE
    scenarios: tuple[str, ...] = ()
    """Plain-code scenarios (``FILE:function``) the grid runs instead of the tracker's
    variants; each trial explores one with ``executions`` as its budget, free ones too."""
    origin: str = field(default="", compare=False)
    """The directory the scenarios or the tracker were named from: a relative file is
    found there (``located``), so a ``--resume`` from elsewhere runs the same files. Not
    part of the grid (shards in different checkouts merge), nor of any name or key."""

    def to_json(self) -> str:
        return json.dumps(asdict(self))  # key order kept: role order is part of config keys

    @classmethod
    def from_json(cls, text: str) -> GridSpec:
        try:
            data = json.loads(text)
            return cls(
                campaign=str(data["campaign"]),
                seed=int(data["seed"]),
                tracker=str(data["tracker"]),
                variants=tuple(str(v) for v in data["variants"]),
                workers=tuple(
                    {str(role): int(n) for role, n in counts.items()} for counts in data["workers"]
                ),
                noises=tuple(float(p) for p in data["noises"]),
                strategies=tuple(str(m) for m in data["strategies"]),
                trials=int(data["trials"]),
                duration=float(data["duration"]),
                executions=int(data["executions"]),
                params={str(k): int(v) for k, v in data["params"].items()},
                expect_clean=tuple(str(v) for v in data.get("expect_clean", ())),
                # a grid saved before the option existed ran the only policy there was
                noise_policy=str(data.get("noise_policy", UNIFORM)),
                # a grid saved before shards existed ran all of itself
                shard=Shard(**{k: int(v) for k, v in data.get("shard", {}).items()}),
                # a grid saved before scenario campaigns ran its tracker
                scenarios=tuple(str(s) for s in data.get("scenarios", ())),
                # a grid saved before it found its files from where they were named
                origin=str(data.get("origin", "")),
            )
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise ConfigError(f"not a campaign grid: {type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class TrialSpec:
    """One trial of one grid point: what to run, and the seed that makes it repeatable."""

    campaign: str
    config_key: str
    trial: int
    seed: int
    tracker: str
    variant: str
    counts: Mapping[str, int]
    noise: float
    mode: str  # free or controlled
    strategy: str  # free mode: free (its noise is a parameter); controlled mode: the strategy
    duration: float  # free mode's budget
    executions: int  # controlled mode's budget
    params: Mapping[str, int]
    noise_policy: str = UNIFORM  # free mode's
    scenario: str | None = None  # FILE:function of a plain-code trial (file as tracker,
    # function as variant, as its record names them); None: a tracker's trial
    origin: str = ""  # the grid's: where a relative scenario or tracker file is

    @property
    def trial_id(self) -> tuple[str, int]:
        return (self.config_key, self.trial)

    def run_config(self) -> RunConfig:
        return RunConfig(
            tracker=located(self.tracker, self.origin),  # records name it as the grid does
            variant=self.variant,
            counts=dict(self.counts),
            params=dict(self.params),
            duration=self.duration,
            max_points=DEFAULT_RUN_STEPS if self.mode == CONTROLLED else None,
            seed=self.seed,
            noise=NoiseConfig(self.noise, policy=self.noise_policy),
        )

    def controlled_options(self) -> ControlledOptions:
        return ControlledOptions(
            strategy=spec_named(self.strategy),
            executions=self.executions,
            run_steps=DEFAULT_RUN_STEPS,
        )


def located(named: str, origin: str) -> str:
    """``named`` (``FILE:name``, or an installed name) with a relative file found in
    ``origin``, the directory it was named from (``GridSpec.origin``; "": the current one)."""
    where, _, name = named.rpartition(":")
    if not origin or not where.endswith(".py") or Path(where).is_absolute():
        return named
    return f"{Path(origin) / where}:{name}"


def trial_kind(strategy: str, noise: float) -> tuple[str, str]:
    """The (mode, strategy) a trial of a grid strategy records.

    A free trial is ``free`` whatever its noise, as the command line calls it: the noise
    probability is a parameter of the configuration (``p=0.1``), not another strategy.
    """
    del noise  # kept in the signature: callers pass the configuration they have
    if strategy != FREE:
        return CONTROLLED, strategy
    return FREE, FREE


def new_campaign_id(now: datetime | None = None) -> str:
    """``2026-11-22T08:00:00Z-ab12``: sorts by start time, and reports read the time back."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment.strftime('%Y-%m-%dT%H:%M:%SZ')}-{secrets.token_hex(2)}"


def derive_seed(base: int, config_key: str, trial: int) -> int:
    """A trial's seed depends only on what it is, never on where or in which order it ran."""
    digest = hashlib.sha256(f"{base}\0{config_key}\0{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def scenario_key(scenario: str, mode: str, strategy: str, noise: float) -> str:
    """``test_counter.py:racy controlled/pct``: a scenario's configuration, its drive named
    as ``config_key`` names a tracker's; no workers, since the scenario starts its own."""
    drive = config_key("", "", {}, mode, strategy, noise, {}).split(maxsplit=1)[1]
    return f"{scenario} {drive}"


def role_abbreviations(roles: Sequence[str]) -> dict[str, str]:
    """``clerk`` -> ``c`` when initials are unambiguous, else the whole role name."""
    initials = [role[0] for role in roles]
    if len(set(initials)) == len(initials):
        return {role: role[0] for role in roles}
    return {role: f"{role}=" for role in roles}


def config_key(
    tracker: str,
    variant: str,
    counts: Mapping[str, int],
    mode: str,
    strategy: str,
    noise: float,
    params: Mapping[str, int],
    noise_policy: str = UNIFORM,
) -> str:
    """``dra/gather-unchecked b2 i1 g1 free p=0.1``: the name a configuration goes by.

    Controlled mode injects no noise, so its keys name none: ``... controlled/pct``. A
    free run with noise under another policy than uniform names it (``free p=0.1 aimed``),
    whatever the default: a key means the same configuration in every night's history.
    """
    short = role_abbreviations(list(counts))
    workers = " ".join(f"{short[role]}{n}" for role, n in counts.items())
    drive = mode if strategy == mode else f"{mode}/{strategy}"
    key = f"{tracker}/{variant} {workers} {drive}"
    if mode == FREE:
        key += f" p={noise:g}"
        if noise > 0 and noise_policy != UNIFORM:
            key += f" {noise_policy}"
    if params:
        key += " " + " ".join(f"{name}={value}" for name, value in sorted(params.items()))
    return key


def default_workers(tracker: type[Tracker]) -> tuple[Mapping[str, int], ...]:
    """Every combination of the counts each role's ``grid`` asks a default campaign to try."""
    roles = list(tracker.roles)
    return tuple(
        dict(zip(roles, combo, strict=True))
        for combo in itertools.product(*(spec.campaign_counts for spec in tracker.roles.values()))
    )


def complete(spec: GridSpec, tracker: type[Tracker] | None) -> GridSpec:
    """Fill the tracker's defaults and reject a grid that cannot run, in one message;
    ``tracker`` is None for a grid of scenarios (their ``FILE:function`` checked by
    ``campaign.scenarios``)."""
    problems: list[str] = []
    if tracker is None:
        variants: tuple[str, ...] = spec.scenarios
        filled: list[Mapping[str, int]] = [{}]
        functions = {scenario.rpartition(":")[2] for scenario in spec.scenarios}
        unknown = [v for v in spec.expect_clean if v not in functions]
        if unknown:
            problems.append(f"--expect-clean names no scenario's function: {', '.join(unknown)}")
    else:
        variants, filled = _tracker_points(spec, tracker, problems)
    bad_strategies = [m for m in spec.strategies if m not in STRATEGIES]
    if bad_strategies or not spec.strategies:
        problems.append(
            f"strategy must be among {', '.join(STRATEGIES)}, got {', '.join(spec.strategies)}"
        )
    problems += [f"noise must be in [0, 1], got {p:g}" for p in spec.noises if not 0 <= p <= 1]
    if spec.noise_policy not in NOISE_POLICIES:
        problems.append(f"--noise-policy must be one of {', '.join(NOISE_POLICIES)}, got "
                        f"{spec.noise_policy}")
    if not spec.noises:
        problems.append("the grid needs at least one noise probability")
    if spec.trials < 1:
        problems.append(f"--trials must be >= 1, got {spec.trials}")
    if not spec.duration > 0:
        problems.append(f"--duration must be > 0 seconds, got {spec.duration:g}")
    elif not spec.duration <= MAX_DURATION_S:
        problems.append(f"--duration must be at most {MAX_DURATION_S:,.0f} seconds (a day), "
                        f"got {spec.duration:g}")
    if spec.executions < 1:
        problems.append(f"--executions must be >= 1, got {spec.executions}")
    elif spec.executions > MAX_EXECUTIONS:
        problems.append(f"--executions must be at most {MAX_EXECUTIONS:,}, got "
                        f"{spec.executions:,}")
    drivers = sum(len(spec.noises) if strategy == FREE else 1
                  for strategy in dict.fromkeys(spec.strategies))
    configurations = len(dict.fromkeys(variants)) * len(filled) * drivers
    if configurations * spec.trials > MAX_GRID_TRIALS:
        problems.append(f"--trials {spec.trials} x {configurations} configurations is "
                        f"{configurations * spec.trials:,} trials: a grid holds at most "
                        f"{MAX_GRID_TRIALS:,}: split it into several campaigns")
    if not spec.shard.valid:
        problems.append(f"--shard must be I/N with 1 <= I <= N, got {spec.shard}")
    elif spec.shard.count > configurations * spec.trials:
        problems.append(f"--shard {spec.shard}: the grid has {configurations * spec.trials:,} "
                        f"trials, so at most that many shards have one to run")
    if problems:
        raise ConfigError("; ".join(problems))
    return GridSpec(
        campaign=spec.campaign,
        seed=spec.seed,
        tracker=spec.tracker,
        variants=() if tracker is None else tuple(dict.fromkeys(variants)),
        workers=() if tracker is None else tuple(filled),
        noises=tuple(dict.fromkeys(spec.noises)),
        strategies=tuple(dict.fromkeys(spec.strategies)),
        trials=spec.trials,
        duration=spec.duration,
        executions=spec.executions,
        params=dict(spec.params),
        expect_clean=spec.expect_clean,
        noise_policy=spec.noise_policy,
        shard=spec.shard,
        scenarios=tuple(dict.fromkeys(spec.scenarios)),
        origin=spec.origin,
    )


def _tracker_points(spec: GridSpec, tracker: type[Tracker], problems: list[str]
                    ) -> tuple[tuple[str, ...], list[Mapping[str, int]]]:
    """The tracker's variants and full worker counts the grid runs; what is wrong with
    them goes to ``problems``."""
    variants = spec.variants or tuple(tracker.variants)
    workers = spec.workers or default_workers(tracker)
    unknown = [v for v in (*variants, *spec.expect_clean) if v not in tracker.variants]
    if unknown:
        problems.append(
            f"tracker {tracker.name} has no variant {', '.join(unknown)}; "
            f"choose from {', '.join(tracker.variants)}"
        )
    filled: list[Mapping[str, int]] = []
    for counts in workers:
        bad_roles = sorted(set(counts) - set(tracker.roles))
        if bad_roles:
            problems.append(
                f"tracker {tracker.name} has no role {', '.join(bad_roles)}; "
                f"its roles are {', '.join(tracker.roles)}"
            )
        full = {
            role: counts.get(role, spec.count) for role, spec in tracker.roles.items()
        }
        problems += [f"{role} count must be >= 1, got {n}" for role, n in full.items() if n < 1]
        if full not in filled:
            filled.append(full)
    return variants, filled


def _grid_points(spec: GridSpec) -> list[tuple[str, Mapping[str, int], tuple[str, float]]]:
    """(variant, counts, (strategy, noise)) of every configuration; noise only varies free
    runs; a scenario grid's "variants" are its scenarios, with no workers of their own."""
    drivers = [
        (strategy, noise)
        for strategy in spec.strategies
        for noise in (spec.noises if strategy == FREE else (0.0,))
    ]
    if spec.scenarios:
        return list(itertools.product(spec.scenarios, [{}], drivers))
    return list(itertools.product(spec.variants, spec.workers, drivers))


def expand(spec: GridSpec) -> list[TrialSpec]:
    """The trials this campaign directory runs: its shard's block of ``every_trial``."""
    return spec.shard.select(every_trial(spec))


def every_trial(spec: GridSpec) -> list[TrialSpec]:
    """Every trial of the grid, whatever the shard, trial-major: a cut-short campaign has
    sampled every config. A trial's seed depends on the grid alone."""
    points = _grid_points(spec)
    trials: list[TrialSpec] = []
    for trial in range(spec.trials):
        for point, counts, (grid_strategy, noise) in points:
            mode, strategy = trial_kind(grid_strategy, noise)
            scenario = point if spec.scenarios else None
            if scenario is not None:
                key = scenario_key(scenario, mode, strategy, noise)
                tracker, _, variant = scenario.rpartition(":")
            else:
                key = config_key(spec.tracker, point, counts, mode, strategy, noise,
                                 spec.params, spec.noise_policy)
                tracker, variant = spec.tracker, point
            trials.append(
                TrialSpec(
                    campaign=spec.campaign,
                    config_key=key,
                    trial=trial,
                    seed=derive_seed(spec.seed, key, trial),
                    tracker=tracker,
                    variant=variant,
                    counts=dict(counts),
                    noise=noise,
                    mode=mode,
                    strategy=strategy,
                    duration=spec.duration,
                    executions=spec.executions,
                    params=dict(spec.params),
                    noise_policy=spec.noise_policy,
                    scenario=scenario,
                    origin=spec.origin,
                )
            )
    return trials
