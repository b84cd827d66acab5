"""The explanation: derived from the recorded steps, in the seed's form, hand-made and real."""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from shmstress.analysis.enabling import enabling
from shmstress.analysis.plain_story import plain_story
from shmstress.analysis.story import Explanation, InDoubt, LostRecords
from shmstress.analysis.swimlane import plain_swimlane
from shmstress.cli.main import main
from shmstress.controlled.strategies import PctSpec
from shmstress.core.result import RunResult, Violation
from shmstress.core.trace import step_number
from shmstress.plain.outcome import PlainOutcome, PlainStep
from shmstress.plain.runner import Exploration, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from shmstress.render.explanation import render_explanation
from shmstress.render.plain_report import outcome_lines
from shmstress.testing.sequential import SequentialRun
from shmstress.trackers.dra.names import NO_ID, Naming
from shmstress.trackers.dra.tracker import DraTracker
from tests.helpers import explain
from tests.recorded_race import (
    BINDER_2,
    CLAIM,
    DEVICE,
    INFORMER,
    OTHER_CLAIM,
    recorded_interleaving,
    recorded_seed_race,
    recorded_unordered_race,
    seed_race,
)

NAMES = Naming(DraTracker.parameters["nodes"].default,
               DraTracker.parameters["devices-per-node"].default)
CLAIM_NAME = NAMES.claim(CLAIM)
DEVICE_NAME = NAMES.device(DEVICE)


def test_seed_race_explained_in_the_seed_form() -> None:
    with recorded_seed_race() as result:
        explanation = explain(result)
    assert explanation is not None
    assert render_explanation(explanation) == "\n".join([
        f'Initial state: claim "{CLAIM_NAME}" is in flight; device "{DEVICE_NAME}" is not in '
        "allocated devices",
        "- gatherer #1: starts GatherAllocatedState, copies allocated devices",
        "- binder #1: stores the claim in the assume cache, adds the device to allocated "
        "devices, removes the claim from in-flight",
        "- gatherer #1: checks in-flight claims",
        "",
        f'=> device "{DEVICE_NAME}" never seen as allocated by this GatherAllocatedState',
    ])
    # The window is the gather: from its start to the point the violation was seen at.
    violation = result.violations[0]
    assert (explanation.start, explanation.end) == (violation.fields["start"], violation.seq)
    assert explanation.notes == ()


def test_unordered_events_race_names_the_worker_holding_the_event() -> None:
    with recorded_unordered_race() as result:
        explanation = explain(result)
    assert explanation is not None
    assert render_explanation(explanation) == "\n".join([
        f'Initial state: claim "{CLAIM_NAME}" is in flight; device "{DEVICE_NAME}" is not in '
        "allocated devices",
        "- informer #1: pops the claim's event",
        "- binder #1: removes the claim from in-flight",
        "- gatherer #1: starts GatherAllocatedState, copies allocated devices, checks in-flight "
        "claims, checks the revision",
        "",
        f'=> device "{DEVICE_NAME}" never seen as allocated by this GatherAllocatedState',
        f'   while informer #1 holds the popped event of claim "{CLAIM_NAME}"',
    ])
    # The window reaches back from the gather's start to the informer's pop.
    violation = result.violations[0]
    assert explanation.start < violation.fields["start"]
    assert explanation.runs[0].first_seq == explanation.start


def test_a_holding_begun_and_ended_in_one_run_is_not_worth_a_word() -> None:
    # In the seed race binder #1 pops its own event and delivers it in one run.
    with recorded_seed_race() as result:
        explanation = explain(result)
        assert result.recording is not None
        popped = [r for r in result.recording.logs
                  if result.recording.labels[r.label].text == "Popped event"
                  and dict(r.fields)["claim"] == CLAIM]
    assert explanation is not None and len(popped) == 1
    assert all("pops the claim's event" not in run.steps for run in explanation.runs)
    assert explanation.still_held == ()


def test_rendered_with_an_indent_the_blank_line_stays_empty() -> None:
    with recorded_seed_race() as result:
        explanation = explain(result)
    assert explanation is not None
    lines = render_explanation(explanation, indent="    ").split("\n")
    assert lines[-2] == "" and lines[-1].startswith("    => device ")
    assert all(line.startswith("    ") for line in lines if line)


def test_steps_of_uninvolved_workers_are_left_out() -> None:
    # The informer updates another claim inside the gather window; it is not part of the story.
    with recorded_seed_race() as result:
        explanation = explain(result)
    assert explanation is not None
    assert [run.worker for run in explanation.runs] == ["gatherer #1", "binder #1", "gatherer #1"]


def test_initial_state_only_states_what_the_kept_records_show() -> None:
    # binder #2's ring overflows before the race: whether the device was ever observed in
    # allocated devices before that is unknown, so only "in flight" (recorded later) is stated;
    # the device's state at the run's start is in doubt, and the explanation says what was lost.
    with recorded_seed_race(ring_size=16, noise_points=40) as result:
        assert result.recording is not None and result.recording.ring_lost == {BINDER_2: 24}
        explanation = explain(result)
    assert explanation is not None
    assert explanation.initial_state == (f'claim "{CLAIM_NAME}" is in flight',)
    assert [run.steps[0] for run in explanation.runs] == [
        "starts GatherAllocatedState",
        "stores the claim in the assume cache",
        "checks in-flight claims",
    ]
    assert explanation.partial
    assert explanation.in_doubt == (
        InDoubt(f'device "{DEVICE_NAME}" is not in allocated devices', -1, None),)
    # its 40 noise points were points 0 to 39 (printed 1 to 40); the ring kept the last 16
    assert explanation.lost == (LostRecords("binder #2", 24, 23),)
    assert render_explanation(explanation).split("\n")[:3] == [
        "Initial state (partial, the rings wrapped: raise --ring-size): "
        f'claim "{CLAIM_NAME}" is in flight',
        f'  in doubt: device "{DEVICE_NAME}" is not in allocated devices as recorded at the '
        "run's start; a lost record may have changed it since",
        "  lost: the first 24 points of binder #2, up to point 24, with their log calls",
    ]


def _wrapped_race(deallocated_after_noise: bool) -> AbstractContextManager[RunResult]:
    """The seed race after informer #1 recorded the device's deallocation and binder #2 took
    40 points (its ring of 16 keeps the last 16): the deallocation before or after them."""

    def race(run: SequentialRun) -> None:
        def deallocate() -> None:
            run.runtime.become(INFORMER)
            run.runtime.point("Observed device allocation", device=NO_ID, old=DEVICE,
                              claim=OTHER_CLAIM)

        if not deallocated_after_noise:
            deallocate()
        run.runtime.become(BINDER_2)
        for _ in range(40):
            run.runtime.point("take pod to bind")
        if deallocated_after_noise:
            deallocate()
            run.runtime.point("Observed device allocation", device=0, old=NO_ID,
                              claim=OTHER_CLAIM + 1)  # what the gather's copy reads from
        seed_race(run)

    return recorded_interleaving("gather-unchecked", 16, race)


def test_a_fact_set_after_every_lost_record_is_known_although_a_ring_wrapped() -> None:
    with _wrapped_race(deallocated_after_noise=True) as result:
        assert result.recording is not None and result.recording.ring_lost
        explanation = explain(result)
    assert explanation is not None and not explanation.partial
    assert (explanation.in_doubt, explanation.lost) == ((), ())
    assert explanation.initial_state == (
        f'claim "{CLAIM_NAME}" is in flight', f'device "{DEVICE_NAME}" is not in allocated devices')
    assert render_explanation(explanation).startswith(
        f'Initial state: claim "{CLAIM_NAME}" is in flight; device "{DEVICE_NAME}" is not in '
        "allocated devices\n")


def test_a_fact_set_before_a_lost_record_keeps_what_was_recorded_and_where() -> None:
    with _wrapped_race(deallocated_after_noise=False) as result:
        explanation = explain(result)
    assert explanation is not None and explanation.partial
    assert explanation.initial_state == (f'claim "{CLAIM_NAME}" is in flight',)
    # binder #2's points were 1 to 40 (printed 2 to 41): the ring lost 1 to 24, all after
    # informer's point 0 (printed 1)
    assert explanation.in_doubt == (
        InDoubt(f'device "{DEVICE_NAME}" is not in allocated devices', 0, "informer #1"),)
    assert explanation.lost == (LostRecords("binder #2", 24, 24),)
    assert (f'  in doubt: device "{DEVICE_NAME}" is not in allocated devices as recorded at '
            "point 1 by informer #1; a lost record may have changed it since"
            ) in render_explanation(explanation).split("\n")


def test_a_step_missing_from_the_rings_comes_from_the_schedule_tape() -> None:
    # An overwritten record still has its step on the tape (worker and label, no fields),
    # so the gatherer's own steps are all there.
    with recorded_seed_race() as result:
        recording = result.recording
        assert recording is not None
        copy = [r for r in recording.records
                if recording.labels[r.label].text == "copy allocated devices"]
        assert len(copy) == 1
        without = replace(recording, records=tuple(r for r in recording.records
                                                   if r is not copy[0]))
        explanation = explain(replace(result, recording=without))
    assert explanation is not None
    assert explanation.runs[0].steps == ("starts GatherAllocatedState",
                                         "copies allocated devices")


def test_no_recording_or_no_violation_means_no_explanation() -> None:
    with recorded_seed_race() as result:
        assert explain(replace(result, recording=None)) is None
        assert explain(replace(result, violations=(), violation_count=0)) is None


def test_fixed_variant_retries_instead_of_violating() -> None:
    with recorded_seed_race("fixed") as result:
        assert result.violations == ()
        assert explain(result) is None


# --- real processes ---------------------------------------------------------------------

_RUN_LINE = re.compile(r"^    - (?P<worker>\w+ #\d+) \(pid \d+\): (?P<steps>.*)$")


def _explanation_runs(output: str) -> list[tuple[str, list[str]]]:
    runs = []
    for line in output.splitlines():
        match = _RUN_LINE.match(line)
        if match:
            runs.append((match["worker"], match["steps"].split(", ")))
    return runs


def _position(lines: list[str], needle: str, after: int = -1) -> int:
    for index, line in enumerate(lines):
        if index > after and needle in line:
            return index
    raise AssertionError(f"{needle!r} not found after line {after} in:\n" + "\n".join(lines))


@pytest.mark.stress
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_free_run_failure_shows_snippet_and_ordered_explanation(
    seed: int, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--variant", "gather-unchecked", "--seed", str(seed), "--quiet",
                 "--duration", "20"])
    output = capsys.readouterr().out
    assert code == 1, output
    assert "gather-complete" in output
    claim = re.search(r"although claim (\S+) held it", output)
    assert claim is not None, output
    gatherer_pid = re.search(r"gather-complete \[gatherer #1 \(pid (\d+)\)\]", output)
    assert gatherer_pid is not None, output

    snippet = output.split("  log snippet:\n", 1)[1].split("  explanation:\n", 1)[0]
    lines = snippet.splitlines()
    pid = f" {gatherer_pid[1]}] "
    start = _position(lines, pid + "scheduler: Starting GatherAllocatedState")
    removed = _position(lines, f'Removed in-flight claim claim="{claim[1]}"', start)
    _position(lines, pid + "scheduler: Finished GatherAllocatedState", removed)

    runs = _explanation_runs(output)
    assert runs, output
    # The gather is the story; only a worker holding the claim's popped event when the gather
    # started may come before it (a binder preempted between its pop and its delivery). The
    # gatherer may have put the claim in flight itself, just before it started the gather
    # (its previous cycle's Reserve): then the story starts there, with the claim not yet
    # in flight.
    first_gather = next(i for i, (worker, _) in enumerate(runs) if worker == "gatherer #1")
    gatherer_first = runs[first_gather][1]
    setup = gatherer_first[:gatherer_first.index("starts GatherAllocatedState")]
    assert setup in ([], ["puts the claim in flight"]), output
    # ... or the write that the gather's copy read, where the story says the race starts
    # (an informer's last change to allocated devices before the gather: its copy saw that)
    started = re.search(r"the race starts at point \d+: (\w+ #\d+) \(pid \d+\) (.+)$", output,
                        re.MULTILINE)
    race_start = [] if started is None else [started[2]]
    steps = [(worker, step) for worker, run_steps in runs[first_gather:] for step in run_steps]
    # ... or the binder's write of the claim's allocation, when it came before the gather:
    # the informer's later "adds the device" observed that write (at load 17 the binder ran
    # ahead of the gatherer, where in Ohly's log it stored the claim during the gather); the
    # same binder then takes the claim out of flight during the gather
    removers = {w for w, s in steps if s == "removes the claim from in-flight"}
    assert all(steps == ["pops the claim's event"] or (
        started is not None and worker == started[1] and steps == race_start) or (
        steps == ["stores the claim in the assume cache"] and worker in removers)
        for worker, steps in runs[:first_gather]), output
    assert runs[-1] == ("gatherer #1", ["checks in-flight claims"])
    copied = steps.index(("gatherer #1", "copies allocated devices"))
    removal = [i for i, (w, s) in enumerate(steps)
               if s == "removes the claim from in-flight" and w != "gatherer #1"]
    added = [i for i, (_, s) in enumerate(steps) if s == "adds the device to allocated devices"]
    # The race itself: the device reaches allocated devices only after the copy, and the
    # claim leaves in-flight before the gatherer looks there.
    assert removal and all(copied < i < len(steps) - 1 for i in removal), output
    assert all(copied < i for i in added), output
    at_start = "is not in flight" if setup else "is in flight"
    # a story that begins at that write: the device may be there before it (an older claim's)
    told_write = any(steps == race_start for _, steps in runs[:first_gather])
    device = r'device "\S+" is (not )?in allocated devices' if told_write else (
        r'device "\S+" is not in allocated devices')
    _assert_initial_state(output, (rf'claim "\S+" {at_start}', device))
    assert "\n\n    => device " in output  # the blank line before it carries no indent


@dataclass(frozen=True)
class _InitialState:
    partial: bool
    known: str  # the phrases of the first line, as printed
    in_doubt: tuple[str, ...]
    lost: tuple[str, ...]


_INITIAL = re.compile(r"^    Initial state(?P<partial> \(partial, the rings wrapped: raise "
                      r"--ring-size\))?: (?P<known>.*)$", re.M)


def _initial_state(output: str) -> _InitialState:
    """The printed explanation's initial state: its first line and the lines under it."""
    found = _INITIAL.search(output)
    assert found is not None, output
    under = output[found.end():].split("\n")[1:]
    below = [line.strip() for line in under[:next(
        i for i, line in enumerate(under) if not line.startswith("      "))]]
    return _InitialState(
        bool(found["partial"]), found["known"],
        tuple(line.removeprefix("in doubt: ") for line in below if line.startswith("in doubt: ")),
        tuple(line.removeprefix("lost: ") for line in below if line.startswith("lost: ")))


def _assert_initial_state(output: str, facts: tuple[str, ...]) -> None:
    """The initial state states ``facts`` (patterns, in order). A run whose rings wrapped
    before the window may not know some of them: each of those is then in doubt, with what
    the kept records last said of it, and the initial state says it is partial and names
    what the rings lost. A run whose rings kept everything states them all."""
    state = _initial_state(output)
    if "records overwritten in the workers' rings" not in output:
        assert not state.partial, output
    if not state.partial:
        assert re.match("; ".join(facts), state.known), output
        return
    assert state.in_doubt and state.lost, output
    lost_line = (r"the first (\d+ points|point) of \w+ #\d+ \(pid \d+\), up to point \d+, "
                 "with their log calls")
    assert all(re.fullmatch(lost_line, lost) for lost in state.lost), output
    known = state.known.split("; ")
    for fact in facts:
        # the object and the fact, whatever the kept records said of it
        about = re.sub(r" is( not)? ", " is (not )?", fact)
        stated = [phrase for phrase in known if re.fullmatch(about, phrase)]
        doubted = [doubt for doubt in state.in_doubt if re.match(
            rf"{about} as recorded at (the run's start|point \d+ by \w+ #\d+ \(pid \d+\)); a "
            "lost record may have changed it since$", doubt)]
        assert len(stated) + len(doubted) == 1, output
        assert not stated or re.fullmatch(fact, stated[0]), output


@pytest.mark.stress
def test_a_run_whose_rings_wrapped_says_what_its_initial_state_lost(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """Controlled mode with this seed is one schedule: with rings of 256 records the race
    comes after three workers lost their first points, and the device's state before the
    gather was last recorded at the run's start. The explanation says so; before, it
    stated the claim alone, as if that were the whole initial state."""
    code = main(["run", "--variant", "gather-unchecked", "--mode", "controlled", "--strategy",
                 "random_walk", "--seed", "1", "--ring-size", "256", "--points", "5000",
                 "--max-steps", "200000", "--param", "nodes=4", "--param", "devices-per-node=16",
                 "--quiet"])
    output = capsys.readouterr().out
    assert code == 1 and "gather-complete" in output, output
    state = _initial_state(output)
    assert state.partial and state.known == 'claim "shmstress/claim-0008" is in flight', output
    assert state.in_doubt == (
        'device "driver.example.com/worker-2/worker-2-device-014" is not in allocated devices '
        "as recorded at the run's start; a lost record may have changed it since",), output
    assert [re.sub(r" \(pid \d+\)", "", lost) for lost in state.lost] == [
        "the first 15 points of binder #1, up to point 49, with their log calls",
        "the first 21 points of binder #2, up to point 75, with their log calls",
        "the first 47 points of gatherer #1, up to point 248, with their log calls",
    ], output
    _assert_initial_state(output, (r'claim "\S+" is in flight',
                                   r'device "\S+" is not in allocated devices'))


@pytest.mark.stress
@pytest.mark.parametrize("seed", [1, 2])
def test_unordered_events_failure_names_the_informer_holding_the_claims_event(
    seed: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # One binder: the only other worker that delivers events is the informer.
    code = main(["run", "--variant", "events-unordered", "--workers", "binder=1",
                 "--seed", str(seed), "--quiet", "--duration", "20"])
    output = capsys.readouterr().out
    assert code == 1 and "gather-complete" in output, output
    claim = re.search(r"although claim (\S+) held it", output)
    assert claim is not None, output
    informer = re.search(r"informer #1 \(pid \d+\)", output)
    assert informer is not None, output
    explanation = output.split("  explanation:\n", 1)[1]
    steps = [(worker, step) for worker, run_steps in _explanation_runs(output)
             for step in run_steps]
    # The informer popped the claim's event before the binder let go of the claim, which the
    # gather then did not find in flight...
    popped = steps.index(("informer #1", "pops the claim's event"))
    released = steps.index(("binder #1", "removes the claim from in-flight"))
    assert popped < released < steps.index(("gatherer #1", "checks in-flight claims")), output
    # ...and delivered it only after the gather's copy, or still held it when the gather ended.
    copied = steps.index(("gatherer #1", "copies allocated devices"))
    delivered = [i for i, step in enumerate(steps)
                 if step == ("informer #1", "adds the device to allocated devices")]
    still_held = f'       while {informer[0]} holds the popped event of claim "{claim[1]}"\n'
    assert still_held in explanation or (delivered and delivered[0] > copied), output
    snippet = output.split("  log snippet:\n", 1)[1].split("  explanation:\n", 1)[0]
    assert f'scheduler: Popped event claim="{claim[1]}"' in snippet, output


def test_explanation_is_plain_data() -> None:
    with recorded_seed_race() as result:
        explanation = explain(result)
    assert isinstance(explanation, Explanation)
    assert explanation.invariant == "gather-complete"
    assert [len(run.steps) for run in explanation.runs] == [2, 3, 1]
    assert explanation.runs[0].first_seq == explanation.start


def test_an_at_rest_violation_is_explained_from_its_objects_last_events() -> None:
    # Claim 7 was put in flight with device 0 and never left: what quiescent-agreement
    # reports at rest. The window is the objects' last events; no worker is the protagonist.
    with recorded_seed_race() as result:
        at_rest = Violation(
            invariant="quiescent-agreement", message="claim 7 is still in flight at rest",
            fields={"kind": 0, "claim": 7, "device": 0, "a": NO_ID, "b": NO_ID},
            worker=None, seq=None, elapsed_s=None, at_rest=True,
        )
        explanation = explain(result, at_rest)
    assert explanation is not None
    assert explanation.initial_state == (
        f'claim "{NAMES.claim(7)}" is not in flight',
        f'device "{NAMES.device(0)}" is not in allocated devices',
    )
    assert [(run.worker, run.steps) for run in explanation.runs] == [
        ("gatherer #1", ("puts the claim in flight",)),
        ("informer #1", ("adds the device to allocated devices",)),
    ]
    assert explanation.outcome == "claim 7 is still in flight at rest"


# --- plain code: the explanation starts where the race starts ----------------------------

_ENABLING = Path(__file__).resolve().parent / "scenarios" / "enabling.py"


def _plain_failure(function: str) -> PlainOutcome:
    """The first failing execution of a scenario of tests/scenarios/enabling.py, seed 1."""
    ref = ScenarioRef.parse(f"{_ENABLING}:{function}")
    result = explore(PlainSpec(ref), Exploration(PctSpec(), 1, 50))
    assert result.failing is not None, result.ends
    return result.failing


def _step(outcome: PlainOutcome, what: str, worker: str | None = None) -> int:
    """The first step that did ``what`` (``write ready.value``), by ``worker`` if named."""
    return next(i for i, s in enumerate(outcome.steps)
                if s.what == what and (worker is None or outcome.who(s.worker) == worker))


def _told(outcome: PlainOutcome, step: int) -> None:
    """``step`` starts the explanation: first step shown, first words, marked racing."""
    story = plain_story(outcome)
    assert story.enabling.start == step and story.shown[0] == step
    assert f"the race starts at step {step_number(step)}:" in "\n".join(outcome_lines(outcome))
    lane = plain_swimlane(outcome, story, "t")
    assert [row.racing for row in lane.steps if row.seq == step] == [True]


def test_a_ready_flag_published_before_its_rows_starts_the_explanation() -> None:
    outcome = _plain_failure("ready_before_rows")
    publish = _step(outcome, "write ready.value")
    reader = outcome.failure.worker if outcome.failure is not None else -1
    seen = _step(outcome, "read ready.value", outcome.who(reader))
    assert publish < seen
    _told(outcome, publish)
    # The rows the reader found were never written: the flag came first.
    (unwritten,) = [link for link in plain_story(outcome).enabling.reads_from
                    if link.unwritten]
    assert unwritten.what.startswith("rows[") and unwritten.reader == reader


def test_a_flag_read_outside_the_lock_then_acted_on_starts_the_explanation() -> None:
    outcome = _plain_failure("flag_outside_lock")
    failure = outcome.failure
    assert failure is not None
    check = _step(outcome, "read items.value", outcome.who(failure.worker))
    _told(outcome, check)
    (stale,) = plain_story(outcome).enabling.stale_reads
    assert stale.read_step == check and stale.writer != failure.worker
    assert outcome.steps[stale.write_step].what == "write items.value"


def test_a_stale_list_head_written_from_starts_the_explanation() -> None:
    outcome = _plain_failure("stale_head")
    failure = outcome.failure
    assert failure is not None and outcome.who(failure.worker) == "main"
    story = plain_story(outcome)
    # A pusher read the head, another pusher replaced it, and the first then linked its
    # node to the head it had read: the walk reaches it through what main read.
    stale = [s for s in story.enabling.stale_reads if s.what == "head.value"]
    assert stale and stale[0].reader != failure.worker
    assert outcome.steps[stale[0].acted_step].what.startswith("write nxt[")
    _told(outcome, stale[0].read_step)


def test_a_process_spinning_on_a_flag_went_on_with_the_fresh_value() -> None:
    """A stale read of a flag re-read at the same line (a loop) is not where a race starts;
    one re-read elsewhere (a check, then the act under a lock) is."""
    def steps(reread_line: int) -> tuple[PlainStep, ...]:
        return (PlainStep(1, "read flag.value", "f.py", 3, value=0, has_value=True),
                PlainStep(2, "write flag.value", "f.py", 9, value=1, has_value=True),
                PlainStep(1, "read flag.value", "f.py", reread_line, value=1, has_value=True),
                PlainStep(1, "read rows[]", "f.py", 5, index=0, value=0, has_value=True))
    assert enabling(steps(3), 1, 4).stale_reads == ()
    (stale,) = enabling(steps(4), 1, 4).stale_reads
    assert (stale.read_step, stale.write_step, stale.acted_step) == (0, 1, 4)


def test_a_value_set_before_the_reader_was_started_is_not_where_its_race_starts() -> None:
    """main's write before it started the reader is ordered before the reader by the start;
    another process's write is a link, and the value nobody wrote is told, not a start."""
    steps = (PlainStep(0, "write size.value", "f.py", 1, value=4, has_value=True),
             PlainStep(0, "start reader", "f.py", 2, value=1, has_value=True),
             PlainStep(0, "start writer", "f.py", 2, value=2, has_value=True),
             PlainStep(2, "write flag.value", "f.py", 7, value=1, has_value=True),
             PlainStep(1, "read size.value", "f.py", 4, value=4, has_value=True),
             PlainStep(1, "read flag.value", "f.py", 5, value=1, has_value=True),
             PlainStep(1, "read rows[]", "f.py", 6, index=0, value=0, has_value=True))
    links = enabling(steps, 1, len(steps))
    assert [(link.what, link.write_step) for link in links.reads_from] == [
        ("flag.value", 3), ("rows[0]", -1)]
    assert links.start == 3
