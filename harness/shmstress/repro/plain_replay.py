"""Replay a plain bundle: take its steps, and say whether the same failure came back."""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.core.exit_reason import ExitCode
from shmstress.plain.outcome import PlainEnd, PlainOutcome
from shmstress.plain.runner import replay
from shmstress.repro.plain_bundle import PlainBundle, expected_end
from shmstress.repro.replay import Verdict


@dataclass(frozen=True)
class PlainReplayReport:
    verdict: Verdict
    detail: str  # one line: what came back, or where and how the replay left the schedule
    bundle: PlainBundle
    outcome: PlainOutcome

    @property
    def exit_code(self) -> ExitCode:
        if self.verdict is Verdict.REPRODUCED:
            return ExitCode.FAILURE
        return ExitCode.BROKEN if self.verdict is Verdict.CRASHED else ExitCode.NOT_REPRODUCED


def replay_plain(bundle: PlainBundle) -> PlainReplayReport:
    outcome = replay(bundle.spec(), bundle.steps, bundle.execution_seed)
    return PlainReplayReport(*_verdict(bundle, outcome), bundle, outcome)


def _verdict(bundle: PlainBundle, outcome: PlainOutcome) -> tuple[Verdict, str]:
    expected = bundle.failure
    taken = f"after {len(outcome.steps)} of {len(bundle.steps)} steps"
    if outcome.end is PlainEnd.DIVERGED:
        assert outcome.divergence is not None
        return Verdict.DIVERGED, (f"the replay left the recorded schedule at "
                                  f"{outcome.divergence}")
    if outcome.end is PlainEnd.HUNG:
        return Verdict.CRASHED, outcome.failure.message if outcome.failure else "hung"
    failure = outcome.failure
    if failure is None:
        return Verdict.NOT_REPRODUCED, (f"no failure {taken}: every process ended "
                                        if outcome.end is PlainEnd.FINISHED else
                                        f"no failure {taken} ({outcome.end.value})")
    if failure.end is expected_end(bundle) and failure.message == expected.message:
        return Verdict.REPRODUCED, f"{failure.message} ({taken})"
    return Verdict.DIFFERENT_VIOLATION, (f"{failure.message} instead of {expected.message} "
                                         f"({taken})")
