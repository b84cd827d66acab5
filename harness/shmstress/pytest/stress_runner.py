"""What the ``shmstress_run`` fixture hands a test: run a configuration, fail with the story.

Session options win over the test's own numbers: ``--stress-duration`` stretches
every run for a nightly job, ``--stress-seed`` pins the seed a failure printed.
A failing run keeps its repro bundle (see ``BundleKeeper``) and the failure names it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import pytest
from shmstress.campaign.bundles import BundleKeeper
from shmstress.campaign.record import result_config_key, trial_record
from shmstress.campaign.trial import run_free
from shmstress.core.config import DEFAULT_NOISE, RunConfig
from shmstress.core.noise import NoiseConfig
from shmstress.core.result import RunResult
from shmstress.testing.verdict import Expectation, judge, meets, render_verdict

TRIAL_PROPERTY = "shmstress_trial"
"""``user_properties`` key that carries a trial record from an xdist worker to the controller."""


@dataclass(frozen=True)
class StressOptions:
    """The session's ``--stress-*`` options."""

    duration: float | None = None
    seed: int | None = None
    record: bool = False
    campaign: str = ""


@dataclass
class StressRunner:
    """Callable fixture value; one per test, so it can number that test's runs."""

    options: StressOptions
    bundles: BundleKeeper
    test_id: str
    user_properties: list[tuple[str, object]]
    clock: Callable[[], str]
    runs: int = 0

    def __call__(
        self,
        variant: str | None = None,
        *,
        expect: Expectation = "clean",
        tracker: str = "dra",
        duration: float = 2.0,
        seed: int | None = None,
        noise: float = DEFAULT_NOISE,
        counts: Mapping[str, int] | None = None,
        params: Mapping[str, int] | None = None,
        max_points: int | None = None,
        checks: tuple[str, ...] | None = None,
    ) -> RunResult:
        """Run once; fail the test unless the outcome is ``expect`` ("clean" or "violation")."""
        if expect not in ("clean", "violation"):
            raise ValueError(f"expect must be 'clean' or 'violation', got {expect!r}")
        config = RunConfig(
            tracker=tracker,
            variant=variant,
            counts=dict(counts or {}),
            params=dict(params or {}),
            duration=self.options.duration or duration,
            max_points=max_points,
            seed=self.options.seed if self.options.seed is not None else seed,
            noise=NoiseConfig(noise),
            checks=checks,
        )
        started_at = self.clock()
        ran = run_free(config)
        result = ran.result
        ok = meets(ran, expect)
        run_index = self.runs
        self.runs += 1
        if ok and not self.options.record:
            return result
        recorded: str | None = None
        shown: str | None = None
        if ran.bundle is not None:
            tag = self.test_id if run_index == 0 else f"{self.test_id}-{run_index}"
            recorded, shown = self.bundles.keep(
                ran.bundle, self.options.campaign, self.user_properties, tag
            )
        report = ran.report(recorded)
        if self.options.record:
            picture = self.bundles.keep_swimlane(report, recorded, self.user_properties)
            record = trial_record(
                result,
                campaign=self.options.campaign,
                trial=run_index,
                started_at=started_at,
                report=report,
                key=result_config_key(result, params=params),
                extra={"test": self.test_id},
                swimlane=picture,
            )
            self.user_properties.append((TRIAL_PROPERTY, json.dumps(record, default=str)))
        if not ok:
            verdict = judge(ran, expect, replace(report, bundle=shown))
            pytest.fail(render_verdict(verdict, self.test_id), pytrace=False)
        return result
