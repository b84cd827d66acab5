"""The type of the ``shmstress_run`` fixture, for a test that annotates its arguments.

The fixture lives in the pytest plugin (``pytest.stress_runner.StressRunner``), a layer
above this one; a test only calls it, so what it needs is its call's shape, here, checked
against the plugin's class by mypy (the fixture is declared to return a ``StressRun``).

    from shmstress.testing import StressRun

    def test_fixed_stays_clean(shmstress_run: StressRun) -> None:
        shmstress_run("fixed", duration=1.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from shmstress.core.config import DEFAULT_NOISE
from shmstress.core.result import RunResult
from shmstress.testing.trackers import TrackerRef
from shmstress.testing.verdict import Expectation


class StressRun(Protocol):
    """Run a tracker once in free mode; fail the test unless the run is what ``expect``
    says (as a fixture does, ``pytest.fail``: the message is the whole story, with no
    traceback); see the ``shmstress_run`` fixture for each argument."""

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
    ) -> RunResult: ...
