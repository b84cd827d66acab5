"""A campaign as pytest items, so pytest-xdist can spread its trials over hosts.

Items hang directly off the session with IDs made from the grid alone
(``::campaign[dra/fixed-b2-i1-g1-free-p=0.1#3]``), because xdist insists that
every worker collects identical IDs and file paths differ between hosts. The record
of each trial travels back to the controller in the report's ``user_properties``,
so the controller alone writes ``results.jsonl``, even for ssh or socket gateways;
a failing trial's repro bundle travels with it (see ``harness.trial_bundle``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from shmstress.campaign.bundles import BundleKeeper
from shmstress.campaign.grid import GridSpec, TrialSpec, expand
from shmstress.campaign.runner import utc_now
from shmstress.campaign.trial import campaign_record, run_trial
from shmstress.core.exit_reason import ExitReason
from shmstress.pytest.cpu_slots import xdist_cpu_slot
from shmstress.pytest.stress_runner import TRIAL_PROPERTY, junit_properties
from shmstress.testing.verdict import judge, render_verdict


class StressCheckFailedError(Exception):
    """A campaign trial whose outcome the grid did not allow; its text is the whole report."""


class CampaignTrialItem(pytest.Item):
    def __init__(
        self,
        *,
        trial: TrialSpec,
        expect_clean: bool,
        slots: int,
        bundles: BundleKeeper,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.trial = trial
        self.expect_clean = expect_clean
        self.slots = slots
        self.bundles = bundles
        self.add_marker("stress")

    def runtest(self) -> None:
        trial = self.trial
        started_at = utc_now()
        with xdist_cpu_slot(self.config, self.slots):
            ran = run_trial(trial)
        if ran.result.exit_reason is ExitReason.INTERRUPTED:
            raise KeyboardInterrupt  # no verdict; the whole session stops as on Ctrl-C
        recorded: str | None = None
        shown: str | None = None
        if ran.bundle is not None:
            recorded, shown = self.bundles.keep(ran.bundle, trial.campaign, self.user_properties)
        report = ran.report(recorded)
        picture = self.bundles.keep_swimlane(report.swimlane, recorded, self.user_properties)
        record = campaign_record(trial, ran, started_at, report, picture)
        self.user_properties.extend(
            junit_properties(ran.result, replace(report, bundle=shown), shown))
        self.user_properties.append((TRIAL_PROPERTY, json.dumps(record, default=str)))
        outcome = record["outcome"]
        if outcome == "error" or (self.expect_clean and outcome == "violation"):
            verdict = judge(ran, "clean", replace(report, bundle=shown))
            raise StressCheckFailedError(render_verdict(verdict))

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        if isinstance(excinfo.value, StressCheckFailedError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        trial = self.trial
        return self.path, None, f"shmstress campaign trial {trial.config_key} #{trial.trial}"


def item_name(trial: TrialSpec) -> str:
    return f"campaign[{trial.config_key.replace(' ', '-')}#{trial.trial}]"


def campaign_items(
    session: pytest.Session, spec: GridSpec, slots: int, bundles: BundleKeeper
) -> list[pytest.Item]:
    return [
        CampaignTrialItem.from_parent(
            session,
            name=item_name(trial),
            trial=trial,
            expect_clean=trial.variant in spec.expect_clean,
            slots=slots,
            bundles=bundles,
        )
        for trial in expand(spec)
    ]
