"""A ``@concurrency_test``'s run as a trial of ``--stress-report``, like a stress run's.

The test's ``check`` is handed this keeper instead of the default one: a failing
execution's bundle, and its swimlane, are kept by the session's ``BundleKeeper`` (under
xdist they travel to the controller with the test's report), and every run's record,
failing or clean, travels with them under ``TRIAL_PROPERTY``. The controller's
``TrialRecorder`` writes all of it, exactly as for the ``stress`` fixture's runs.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from shmstress.campaign.bundles import BundleKeeper
from shmstress.campaign.record import scenario_record
from shmstress.campaign.scenarios import scenario_swimlane
from shmstress.plain.runner import PlainResult
from shmstress.pytest.stress_runner import TRIAL_PROPERTY
from shmstress.repro.plain_bundle import PlainBundle


@dataclass
class ScenarioTrial:
    """The ``ScenarioKeeper`` of one test's run; ``scenario`` is ``FILE:function``, the
    file as the test's node ID names it (relative to the rootdir)."""

    bundles: BundleKeeper
    campaign: str
    test_id: str
    scenario: str
    user_properties: list[tuple[str, object]]
    started_at: str
    recorded: str | None = None  # the bundle, relative to the directory of results.jsonl

    def keep(self, bundle: PlainBundle) -> Path:
        self.recorded, shown = self.bundles.keep(bundle, self.campaign, self.user_properties,
                                                 self.test_id)
        return Path(shown)

    def finished(self, result: PlainResult, accept_uncontrolled: bool) -> None:
        lane = scenario_swimlane(self.scenario, result) if self.recorded is not None else None
        picture = self.bundles.keep_swimlane(lane, self.recorded, self.user_properties)
        record = scenario_record(
            result, scenario=self.scenario, campaign=self.campaign, trial=0,
            started_at=self.started_at, bundle=self.recorded, swimlane=picture,
            rerun_command=shlex.join(["pytest", self.test_id]),
            accept_uncontrolled=accept_uncontrolled, extra={"test": self.test_id},
            results_dir=self.bundles.results_dir)
        self.user_properties.append((TRIAL_PROPERTY, json.dumps(record, default=str)))
