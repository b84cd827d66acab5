"""What the ``shmstress_run`` fixture hands a test: run a configuration, fail with the story.

Session options win over the test's own numbers: ``--stress-duration`` stretches
every run for a nightly job, ``--stress-seed`` pins the seed a failure printed.
A failing run keeps its repro bundle (see ``BundleKeeper``) and the failure names it;
its seed goes into the failure database, and the next session's run of the same test
tries that seed first. JUnit XML gets ``seed``, ``bundle``, ``replay_command`` and
``invariant`` as properties of their own, which CI dashboards show without parsing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from shmstress.campaign.bundles import BundleKeeper
from shmstress.campaign.record import result_config_key, trial_record
from shmstress.campaign.trial import TrialRun, run_free
from shmstress.core.config import DEFAULT_NOISE, RunConfig
from shmstress.core.errors import ShmstressError
from shmstress.core.noise import NoiseConfig
from shmstress.core.result import RunResult
from shmstress.free.learning import Learning
from shmstress.render.failure import FailureReport
from shmstress.testing.failure_db import FailureDatabase, StoredFailure
from shmstress.testing.trackers import TrackerRef, tracker_spec
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
    tracker: str = "dra"  # the ini option shmstress_tracker, already resolved against root
    root: Path | None = None  # pytest's rootdir: what a relative tracker path is relative to
    database: FailureDatabase | None = None  # None: no failure database (--stress-database=)

    @property
    def learning(self) -> Learning | None:
        """Aimed noise's learning lives in the database directory too (one place to delete)."""
        return Learning(self.database.directory) if self.database is not None else None


def junit_properties(
    result: RunResult, report: FailureReport | None, bundle: str | None
) -> list[tuple[str, object]]:
    """The run's ``seed``, and for a violation its ``bundle``, ``replay_command`` and
    ``invariant``: one JUnit property each, so a CI page shows them as they are."""
    properties: list[tuple[str, object]] = [("seed", result.config.seed)]
    if bundle is not None:
        properties.append(("bundle", bundle))
    if report is not None and report.violation is not None:
        properties.append(("replay_command", report.replay_command))
        properties.append(("invariant", report.violation.invariant))
    return properties


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
        tracker: TrackerRef | None = None,
        duration: float = 2.0,
        seed: int | None = None,
        noise: float = DEFAULT_NOISE,
        noise_policy: str | None = None,
        counts: Mapping[str, int] | None = None,
        params: Mapping[str, int] | None = None,
        max_points: int | None = None,
        checks: tuple[str, ...] | None = None,
    ) -> RunResult:
        """Run ``variant`` of ``tracker`` once in free mode; fail the test unless the outcome
        is ``expect`` ("clean" or "violation"); return the ``RunResult``.

        See the ``shmstress_run`` fixture for what each argument means.
        """
        __tracebackhide__ = True  # a failure's traceback ends in the test that called us
        if expect not in ("clean", "violation"):
            raise ValueError(f"expect must be 'clean' or 'violation', got {expect!r}")
        run_index = self.runs
        self.runs += 1
        options = self.options
        stored = None
        if options.seed is None and seed is None and options.database is not None:
            stored = options.database.fetch(self.test_id, run_index)
        chosen = options.seed if options.seed is not None else seed
        if stored is not None:
            chosen = stored.seed
        try:
            spec = tracker_spec(options.tracker if tracker is None else tracker, options.root)
        except TypeError as exc:  # a class made inside a function: it says so, in one line
            raise exc.with_traceback(None) from None
        try:
            config = RunConfig(
                tracker=spec,
                variant=variant,
                counts=dict(counts or {}),
                params=dict(params or {}),
                duration=options.duration or duration,
                max_points=max_points,
                seed=chosen,
                noise=NoiseConfig(noise) if noise_policy is None
                else NoiseConfig(noise, policy=noise_policy),
                checks=checks,
            )
            started_at = self.clock()
            ran = run_free(config, learning=options.learning)
        except ShmstressError as exc:
            # The user's call was wrong (an unknown variant, a misspelt role): the message is
            # the whole story, and the harness's frames would bury the test's line.
            raise exc.with_traceback(None) from None
        return self._judged(ran, expect, run_index, started_at, params, stored)

    def _judged(
        self,
        ran: TrialRun,
        expect: Expectation,
        run_index: int,
        started_at: str,
        params: Mapping[str, int] | None,
        stored: StoredFailure | None,
    ) -> RunResult:
        __tracebackhide__ = True
        result = ran.result
        ok = meets(ran, expect)
        database = self.options.database
        if ok:
            if stored is not None and database is not None:
                database.delete(self.test_id, run_index)  # the stored seed passes now
            if not self.options.record:  # nothing to keep of a run that went as expected
                self.user_properties.extend(junit_properties(result, None, None))
                return result
        recorded: str | None = None
        shown: str | None = None
        if ran.bundle is not None:
            tag = self.test_id if run_index == 0 else f"{self.test_id}-{run_index}"
            recorded, shown = self.bundles.keep(
                ran.bundle, self.options.campaign, self.user_properties, tag
            )
        report = ran.report(recorded)
        self.user_properties.extend(
            junit_properties(result, replace(report, bundle=shown), shown)
        )
        if self.options.record:
            picture = self.bundles.keep_swimlane(report.swimlane, recorded,
                                                self.user_properties)
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
        if ok:
            return result
        if database is not None and result.config.seed is not None:
            first = result.principal_violation
            database.save(self.test_id, run_index, StoredFailure(
                seed=result.config.seed,
                bundle=str(Path(shown).absolute()) if shown else None,
                invariant=first.invariant if first is not None else None,
                recorded_at=started_at,
            ))
        verdict = judge(ran, expect, replace(report, bundle=shown))
        text = render_verdict(verdict, self.test_id)
        if stored is not None:  # last: the first line stays the headline of the failure
            text += (f"\nretried seed {stored.seed} first: it failed in an earlier session "
                     f"({stored.recorded_at}; failure database "
                     f"{database.directory if database else ''})")
        pytest.fail(text, pytrace=False)
