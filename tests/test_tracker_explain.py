"""Tracker explanations that start where the race starts (issue 13 part 5).

The built-in trackers declare what each point's step reads and writes
(``Words.accesses``); from that the explanation of a racy variant's failure
walks back to the read the failing step went on with and the write that made
it stale, tells those steps, words each link under the outcome, and the
swimlane marks them. A tracker that declares nothing keeps the explanation it
had: no links, the same window. Each case is one seeded controlled run of a
few executions; what is asserted is the shape of the race (which role read
at which point, who overwrote it), never a step number.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path

import pytest

from shmstress.analysis.enabling import Enabling, StaleRead
from shmstress.analysis.failure import FailureAnalysis, analyse
from shmstress.analysis.swimlane import swimlane
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import RandomWalkSpec
from shmstress.core.access import Access
from shmstress.core.config import RunConfig
from shmstress.core.result import RunResult
from shmstress.core.trace import step_number
from shmstress.plugin.wording import Wording, wording_by_name
from shmstress.render.explanation import render_explanation

# (tracker, variant): (the reader's role, the point it read at, the overwriting point)
RACES = {
    ("claim-deallocation", "pod-scheduling-flag"):
        ("scheduler", "get podscheduling", "update podscheduling"),
    ("gpu-assignments", "list-before-lock"): ("cleanup", "List pods on node", "Created pod"),
    ("device-group", "select-then-allocate"):
        ("binder", "Check group binding", "Bind group to node"),
}


PUBLISHED = f"{Path(__file__).parent / 'trackers' / 'published.py'}:Published"


def _failing(tracker: str, variant: str) -> RunResult:
    found = run_controlled(RunConfig(tracker=tracker, variant=variant, seed=1),
                           ControlledOptions(RandomWalkSpec(), executions=200))
    assert found.failing is not None, f"{tracker}/{variant}: no failure in 200 executions"
    assert found.run.recording is not None
    return found.run


@pytest.fixture(scope="module", params=sorted(RACES), ids="/".join)
def race(request: pytest.FixtureRequest) -> tuple[tuple[str, str], RunResult, FailureAnalysis]:
    key: tuple[str, str] = request.param
    result = _failing(*key)
    analysis = analyse(result, wording_by_name(key[0], result.config.params))
    assert analysis is not None
    return key, result, analysis


def _label(result: RunResult, seq: int) -> str:
    assert result.recording is not None
    return result.recording.steps[seq].label


def _the_stale_read(key: tuple[str, str], result: RunResult, links: Enabling) -> StaleRead:
    role, read_at, written_at = RACES[key]
    roles = {w.worker_id: w.role for w in result.workers}
    found = [s for s in links.stale_reads
             if roles[s.reader] == role and _label(result, s.read_step) == read_at
             and _label(result, s.write_step) == written_at]
    assert found, f"no stale read of {read_at!r} overwritten at {written_at!r}: {links}"
    return found[0]


def test_the_explanation_starts_at_the_read_the_race_starts_with(
    race: tuple[tuple[str, str], RunResult, FailureAnalysis],
) -> None:
    key, result, analysis = race
    links = analysis.focus.enabling
    stale = _the_stale_read(key, result, links)
    assert links.start is not None and links.start <= stale.read_step
    told = analysis.explanation
    assert told.start <= stale.read_step  # the window reaches back to the read
    assert told.links[0].startswith(f"the race starts at point {step_number(links.start)}: ")
    assert any(line.startswith("stale read of ")
               and f"(point {step_number(stale.read_step)})" in line
               and f"(point {step_number(stale.write_step)})" in line for line in told.links)
    text = render_explanation(told)
    assert text.index("=> ") < text.index("the race starts at point")
    # the linked steps are told in the interleaving too, each by the worker that took it
    told_steps = {(step.worker, step.seq) for step in analysis.story}
    assert (stale.reader, stale.read_step) in told_steps
    assert (stale.writer, stale.write_step) in told_steps


def test_the_swimlane_marks_the_linked_steps(
    race: tuple[tuple[str, str], RunResult, FailureAnalysis],
) -> None:
    key, result, analysis = race
    assert result.recording is not None
    lane = swimlane(analysis, result.recording.steps, result.workers, "race", keep_all=True)
    racing = {step.seq for step in lane.steps if step.racing}
    stale = _the_stale_read(key, result, analysis.focus.enabling)
    assert {stale.read_step, stale.write_step} <= racing


class _Undeclared:
    """A tracker's words with every ``accesses`` declaration taken away."""

    @staticmethod
    def accesses(label: str, fields: Mapping[str, object]) -> tuple[Access, ...] | None:
        return None


def test_an_undeclared_tracker_keeps_its_explanation(
    race: tuple[tuple[str, str], RunResult, FailureAnalysis],
) -> None:
    key, result, declared = race
    wording = wording_by_name(key[0], result.config.params)
    words = copy.copy(wording.words)
    words.accesses = _Undeclared.accesses  # type: ignore[method-assign]
    plain = analyse(result, Wording(words, wording.invariants, wording.params))
    assert plain is not None
    assert plain.focus.enabling == Enabling()
    assert plain.explanation.links == ()
    assert "race starts" not in render_explanation(plain.explanation)
    # the declared window only ever reaches further back, over the same end
    assert declared.focus.start <= plain.focus.start
    assert declared.focus.end == plain.focus.end


def test_a_flag_published_before_its_rows_starts_the_explanation() -> None:
    """The reader's last steps read the flag, then the empty rows: the symptom. Where it
    starts is the writer's publish, which the reader's read of the flag read from."""
    result = _failing(PUBLISHED, "flag-first")
    wording = wording_by_name(PUBLISHED, result.config.params)
    analysis = analyse(result, wording)
    assert analysis is not None
    roles = {w.worker_id: w.role for w in result.workers}
    (link,) = [r for r in analysis.focus.enabling.reads_from
               if _label(result, r.read_step) == "read flag"]
    assert roles[link.reader] == "reader" and roles[link.writer] == "writer"
    assert _label(result, link.write_step) == "publish"
    assert analysis.focus.enabling.start == link.write_step
    assert analysis.explanation.links[0].startswith(
        f"the race starts at point {step_number(link.write_step)}")
    assert (link.writer, link.write_step) in {(s.worker, s.seq) for s in analysis.story}
    assert result.recording is not None
    lane = swimlane(analysis, result.recording.steps, result.workers, "race", keep_all=True)
    assert link.write_step in {step.seq for step in lane.steps if step.racing}
