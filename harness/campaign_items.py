"""A campaign as pytest items, so pytest-xdist can spread its trials over hosts.

Items hang directly off the session with IDs made from the grid alone
(``::campaign[dra/fixed-b2-i1-g1-free/noise-p=0.1#3]``), because xdist insists that
every worker collects identical IDs and file paths differ between hosts. The record
of each trial travels back to the controller in the report's ``user_properties``,
so the controller alone writes ``results.jsonl``, even for ssh or socket gateways.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.campaign import utc_now
from harness.cpu_slots import xdist_cpu_slot
from harness.exit_reason import ExitReason
from harness.grid import GridSpec, TrialSpec, expand
from harness.runner import run
from harness.stress_failure import judge, render_verdict
from harness.stress_runner import TRIAL_PROPERTY
from harness.trial_record import outcome_of, trial_record


class StressCheckFailedError(Exception):
    """A campaign trial whose outcome the grid did not allow; its text is the whole report."""


class CampaignTrialItem(pytest.Item):
    def __init__(self, *, trial: TrialSpec, expect_clean: bool, slots: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.trial = trial
        self.expect_clean = expect_clean
        self.slots = slots
        self.add_marker("stress")

    def runtest(self) -> None:
        trial = self.trial
        started_at = utc_now()
        with xdist_cpu_slot(self.slots):
            result = run(trial.run_config())
        if result.exit_reason is ExitReason.INTERRUPTED:
            raise KeyboardInterrupt  # no verdict; the whole session stops as on Ctrl-C
        record = trial_record(
            result,
            campaign=trial.campaign,
            trial=trial.trial,
            started_at=started_at,
            key=trial.config_key,
            mode=trial.mode,
        )
        self.user_properties.append((TRIAL_PROPERTY, json.dumps(record, default=str)))
        outcome = outcome_of(result)
        if outcome == "error" or (self.expect_clean and outcome == "violation"):
            raise StressCheckFailedError(render_verdict(judge(result, "clean")))

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


def campaign_items(session: pytest.Session, spec: GridSpec, slots: int) -> list[pytest.Item]:
    return [
        CampaignTrialItem.from_parent(
            session,
            name=item_name(trial),
            trial=trial,
            expect_clean=trial.variant in spec.expect_clean,
            slots=slots,
        )
        for trial in expand(spec)
    ]
