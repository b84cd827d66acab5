"""Which host a search runs in: a forked one first (ready in milliseconds), a fresh interpreter
for the rest of a long search, with the executions those of one host."""

from __future__ import annotations

from pathlib import Path

import pytest

from shmstress.controlled.strategies import RandomWalkSpec
from shmstress.plain import runner
from shmstress.plain.outcome import PlainOutcome
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from tests.helpers import spy_on_hosts

COUNTER = Path(__file__).resolve().parent.parent / "examples" / "plain" / "counter.py"


def _fingerprint(outcome: PlainOutcome) -> tuple[object, ...]:
    return (outcome.end, outcome.execution_seed, outcome.processes,
            tuple((s.worker, s.label, s.value) for s in outcome.steps), outcome.uncontrolled)


def _search(monkeypatch: pytest.MonkeyPatch, fresh_from: int) -> tuple[list[bool], list[object]]:
    """Five executions of the locked counter; a search of at least ``fresh_from`` executions
    moves to a fresh host after two."""
    hosts = spy_on_hosts(monkeypatch)
    monkeypatch.setattr(runner, "FRESH_HOST_EXECUTIONS", fresh_from)
    monkeypatch.setattr(runner, "FORKED_HOST_EXECUTIONS", 2)
    runs: list[object] = []
    spec = PlainSpec(ScenarioRef.parse(f"{COUNTER}:locked"))
    result = explore(spec, Exploration(RandomWalkSpec(), 3, 5),
                     witness=lambda outcome: runs.append(_fingerprint(outcome)))
    assert result.executions == 5 and result.failing is None
    return hosts, runs


def test_a_long_search_moves_to_a_fresh_host_and_runs_what_one_host_would(
        monkeypatch: pytest.MonkeyPatch) -> None:
    one_host, whole = _search(monkeypatch, fresh_from=1_000)
    assert one_host == [False]
    moved, runs = _search(monkeypatch, fresh_from=5)
    assert moved == [False, True]  # forked for the first two, fresh for the other three
    assert runs == whole
