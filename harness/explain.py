"""A violation explained as a short interleaving, derived from the recorded steps.

The form is the one a developer writes under a log snippet in a commit
message: the initial state of the objects involved, one line per run of
consecutive steps of one worker, then what broke. Nothing here knows a race:
the window and objects come from ``harness.focus``, the words from the
tracker, and the structure from the order of the recorded points. It works
on any RunResult with a recording, a free run's or a replayed schedule's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.focus import Focus, focus, label_text
from harness.log_words import LogWords, Subject
from harness.recording import Recording
from harness.result import RunResult, Violation
from harness.tracker_api import WorkerInfo


@dataclass(frozen=True)
class StepRun:
    """Consecutive steps of one worker that matter, as the tracker words them."""

    worker: str  # "gatherer #1 (pid 18778)"
    worker_id: int
    steps: tuple[str, ...]
    first_seq: int
    last_seq: int


@dataclass(frozen=True)
class Explanation:
    invariant: str
    initial_state: tuple[str, ...]  # one phrase per object whose state is known
    runs: tuple[StepRun, ...]
    outcome: str
    start: int
    end: int
    notes: tuple[str, ...] = ()  # what the recording lost, if anything


def explain(result: RunResult, violation: Violation | None = None) -> Explanation | None:
    """Explain ``violation`` (the run's first by default); None without a recording."""
    found = focus(result, violation)
    if found is None or result.recording is None:
        return None
    recording = result.recording
    horizon = _complete_from(recording)
    chosen = found.violation
    return Explanation(
        invariant=chosen.invariant,
        initial_state=_initial_state(found, recording, horizon),
        runs=_runs(found, recording, result.workers),
        outcome=found.words.outcome(chosen.invariant, chosen.fields) or chosen.message,
        start=found.start,
        end=found.end,
        notes=_notes(found, recording, horizon),
    )


def render_explanation(explanation: Explanation) -> str:
    initial = "; ".join(explanation.initial_state) or "unknown (nothing recorded about it)"
    lines = [f"Initial state: {initial}"]
    lines += [f"- {run.worker}: {', '.join(run.steps)}" for run in explanation.runs]
    lines += ["", f"=> {explanation.outcome}"]
    lines += [f"(note: {note})" for note in explanation.notes]
    return "\n".join(lines)


def _runs(found: Focus, recording: Recording, workers: Sequence[WorkerInfo]) -> tuple[StepRun, ...]:
    """The window's steps that matter, collapsed into runs of one worker."""
    words = found.words
    by_seq = {r.seq: r for r in recording.records if found.start <= r.seq <= found.end}
    runs: list[StepRun] = []
    for seq in range(found.start, found.end + 1):
        record = by_seq.get(seq)
        if record is not None:
            worker, label = record.worker, label_text(recording, record)
            fields = dict(record.fields)
            involved, elsewhere = found.relevance(recording, record)
        elif seq < len(recording.steps):  # overwritten in its ring: the tape still has the step
            step = recording.steps[seq]
            worker, label, fields, involved, elsewhere = step.worker, step.label, {}, False, False
        else:
            continue
        # Others' steps on the objects; the worker's own steps unless about other objects.
        if not involved and (worker != found.worker or elsewhere):
            continue
        phrase = words.step(label, fields)
        if phrase is None:
            continue
        if runs and runs[-1].worker_id == worker:
            last = runs[-1]
            steps = last.steps if last.steps[-1] == phrase else (*last.steps, phrase)
            runs[-1] = StepRun(last.worker, worker, steps, last.first_seq, seq)
        else:
            runs.append(StepRun(_describe(worker, workers), worker, (phrase,), seq, seq))
    return tuple(runs)


def _initial_state(found: Focus, recording: Recording, horizon: int) -> tuple[str, ...]:
    """Facts of the involved objects just before the window, folded from the records."""
    words = found.words
    facts: dict[Subject, dict[str, bool]] = {
        subject: dict(words.initial_facts(subject)) if horizon == 0 else {}
        for subject in found.scope.subjects
    }
    for record in recording.records:
        if record.seq >= found.start:
            break
        if record.seq < horizon or not record.fields:
            continue
        for effect in words.effects(label_text(recording, record), dict(record.fields)):
            if effect.subject in facts:
                facts[effect.subject][effect.fact] = effect.holds
    return tuple(
        _state_phrase(words, found.scope.names.get(subject) or words.name(subject), known)
        for subject, known in facts.items()
        if known
    )


def _state_phrase(words: LogWords, name: str, known: dict[str, bool]) -> str:
    order = [f for f in words.facts if f in known] + [f for f in known if f not in words.facts]
    return f"{name} is " + ", ".join(f if known[f] else f"not {f}" for f in order)


def _complete_from(recording: Recording) -> int:
    """First sequence number from which every worker's records are all still in its ring."""
    horizon = 0
    for worker in recording.ring_lost:
        kept = [r.seq for r in recording.records if r.worker == worker]
        horizon = max(horizon, min(kept) if kept else 0)
    return horizon


def _notes(found: Focus, recording: Recording, horizon: int) -> tuple[str, ...]:
    notes = []
    if horizon > found.start:
        notes.append(
            f"records before point {horizon} were overwritten in a ring (raise --ring-size); "
            "steps there are known from the schedule tape without their fields"
        )
    if found.end >= len(recording.steps) and recording.tape_lost:
        notes.append("the schedule tape ended before the violation (raise --tape-size)")
    return tuple(notes)


def _describe(worker: int, workers: Sequence[WorkerInfo]) -> str:
    if 0 <= worker < len(workers):
        return workers[worker].describe()
    return f"worker {worker}"
