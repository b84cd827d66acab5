"""A failure as a swimlane, as data: one lane per worker, one row per step, the racing marked.

Lincheck's interleaving table and Jepsen's timeline show *who did what when* at a
glance, which a paragraph of explanation cannot. The swimlane is built from the
same ``FailureAnalysis`` as the explanation (its window and its story), so the
picture and the words always talk about the same steps: a step is *racing* when
the explanation tells it. A long window (a free run's) keeps every racing step
and folds long stretches of other steps into one gap row, so a picture of a
200,000-step schedule is tens of rows. Rendering (text, SVG) is
``shmstress.render.swimlane``; nothing here draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shmstress.analysis.failure import FailureAnalysis
from shmstress.analysis.plain_story import PlainStory
from shmstress.core.trace import Record, Step, step_number
from shmstress.core.workers import WorkerInfo
from shmstress.plain.outcome import PlainOutcome, PlainStep

WHOLE_SCHEDULE = 40
"""A schedule of at most this many steps is shown whole, from its first step; longer ones show the
window the explanation focuses on."""

FOLD_OVER = 6
"""A stretch of more than this many steps that do not race is folded into a gap row..."""

FOLD_EDGE = 2
"""...keeping this many steps at each end, so the reader sees what leads in and out."""


@dataclass(frozen=True)
class Lane:
    """One column: a worker, named by its role (``clerk #2``) as the explanation names it."""

    worker: int
    name: str
    detail: str  # with its pid, for a tooltip: pids differ between runs, names do not


@dataclass(frozen=True)
class LaneStep:
    """One step of the schedule, in its worker's lane."""

    seq: int  # its index in the schedule; ``number`` is what a reader sees
    worker: int
    text: str  # the tracker's phrase for the step, or its label, with the fields
    detail: str  # the label with every field, for a tooltip: never truncated
    racing: bool  # a step the explanation tells
    violation: bool = False  # the step at which the violation was found

    @property
    def number(self) -> int:
        """The step's number, as the explanation prints it (``core.trace.step_number``)."""
        return step_number(self.seq)


@dataclass(frozen=True)
class LaneGap:
    """Consecutive steps left out because none of them races."""

    first_seq: int
    last_seq: int
    per_worker: tuple[tuple[int, int], ...]  # (worker, steps) in lane order

    @property
    def numbers(self) -> tuple[int, int]:
        """The first and the last step number left out, as the step column prints them."""
        return step_number(self.first_seq), step_number(self.last_seq)

    @property
    def count(self) -> int:
        """The steps left out, as counted per worker: every step number the rows skip."""
        return sum(steps for _, steps in self.per_worker)


Row = LaneStep | LaneGap


@dataclass(frozen=True)
class Swimlane:
    """Everything a renderer needs; renderers add no facts of their own."""

    title: str
    lanes: tuple[Lane, ...]
    rows: tuple[Row, ...]
    violation: str  # the invariant and what broke, then who still held what
    total_steps: int  # of the whole schedule
    notes: tuple[str, ...] = ()  # what the picture leaves out, and why

    @property
    def steps(self) -> tuple[LaneStep, ...]:
        return tuple(row for row in self.rows if isinstance(row, LaneStep))

    def lane_name(self, worker: int) -> str:
        for lane in self.lanes:
            if lane.worker == worker:
                return lane.name
        return f"worker {worker}"


def value_text(value: object) -> str:
    """A field value as a log line shows it: ``[1,3]`` for a tuple, no quotes for text."""
    if isinstance(value, tuple | list):
        return "[" + ",".join(value_text(v) for v in value) + "]"
    return str(value)


def fields_text(fields: Mapping[str, object]) -> str:
    return " ".join(f"{key}={value_text(value)}" for key, value in fields.items())


def lanes_of(workers: Sequence[WorkerInfo], count: int) -> tuple[Lane, ...]:
    """One lane per worker of the run, in worker-id order (the tracker's role order)."""
    known = {w.worker_id: w for w in workers}
    lanes = []
    for worker in range(count):
        info = known.get(worker)
        if info is None:
            lanes.append(Lane(worker, f"worker {worker}", f"worker {worker}"))
        else:
            name = f"{info.role} #{info.index + 1}"
            lanes.append(Lane(worker, name, info.describe()))
    return tuple(lanes)


def fold(steps: Sequence[LaneStep], lanes: Sequence[Lane], keep_all: bool = False) -> list[Row]:
    """``steps`` with each long stretch of steps that do not race folded into a gap."""
    if keep_all:
        return list(steps)
    rows: list[Row] = []
    stretch: list[LaneStep] = []

    def flush() -> None:
        if len(stretch) > FOLD_OVER:
            hidden = stretch[FOLD_EDGE:-FOLD_EDGE]
            order = {lane.worker: index for index, lane in enumerate(lanes)}
            counts: dict[int, int] = {}
            for step in hidden:
                counts[step.worker] = counts.get(step.worker, 0) + 1
            per_worker = tuple(sorted(counts.items(), key=lambda item: order.get(item[0], 0)))
            rows.extend(stretch[:FOLD_EDGE])
            rows.append(LaneGap(hidden[0].seq, hidden[-1].seq, per_worker))
            rows.extend(stretch[-FOLD_EDGE:])
        else:
            rows.extend(stretch)
        stretch.clear()

    for step in steps:
        if step.racing or step.violation:
            flush()
            rows.append(step)
        else:
            stretch.append(step)
    flush()
    return rows


def swimlane(
    analysis: FailureAnalysis,
    tape: Sequence[Step],
    workers: Sequence[WorkerInfo],
    title: str,
    keep_all: bool = False,
) -> Swimlane:
    """The swimlane of ``analysis``: the steps of its window (of the whole schedule when it
    is short), those its story tells marked racing; ``keep_all`` folds nothing."""
    found = analysis.focus
    told_at: dict[tuple[int, int], list[str]] = {}  # a step's phrases in the explanation
    for told_step in analysis.story:
        phrases = told_at.setdefault((told_step.worker, told_step.seq), [])
        if told_step.phrase not in phrases:
            phrases.append(told_step.phrase)
    end = min(found.end, len(tape) - 1) if tape else found.end
    first = 0 if len(tape) <= WHOLE_SCHEDULE else found.start
    points: dict[int, Record] = {r.seq: r for r in found.window if r.sub == 0}
    lane_count = max([len(workers), *(s.worker + 1 for s in tape)], default=0)
    lanes = lanes_of(workers, lane_count)
    steps: list[LaneStep] = []
    for seq in range(first, end + 1):
        record = points.get(seq)
        if record is not None:
            label, fields, worker = found.label(record), dict(record.fields), record.worker
        elif seq < len(tape):
            label, fields, worker = tape[seq].label, {}, tape[seq].worker
        else:
            continue
        told_here = told_at.get((worker, seq))
        # The explanation's words where it tells the step (a log call after the point may
        # be what it tells: "pops the claim's event" at a bare "pop event" point).
        phrase = ("; ".join(told_here) if told_here
                  else found.words.step(label, fields) if record is not None else None)
        shown = fields_text(fields)
        text = f"{phrase or label} {shown}".rstrip()
        detail = f"{label} {shown}".rstrip()
        if phrase:
            detail = f"{phrase}: {detail}"
        steps.append(LaneStep(seq, worker, text, detail, told_here is not None,
                              violation=seq == end))
    told = analysis.explanation
    invariant = analysis.violation.invariant
    violation = (told.outcome if told.outcome.startswith(f"{invariant}:")
                 else f"{invariant}: {told.outcome}")
    violation += "".join(f"\nwhile {holding}" for holding in told.still_held)
    notes = list(told.notes)
    if first > 0:
        notes.insert(0, f"steps {step_number(first):,} to {step_number(end):,} of {len(tape):,}: "
                     "the window the "
                     "explanation is about")
    return Swimlane(title, lanes, tuple(fold(steps, lanes, keep_all)), violation, len(tape),
                    tuple(notes))


def plain_swimlane(outcome: PlainOutcome, story: PlainStory, title: str) -> Swimlane:
    """The swimlane of a failing plain-code execution: the steps its story shows (the data
    and synchronisation steps), those of a lost update or lost notify marked racing, the
    steps it leaves out counted in gaps, the failure at the bottom."""
    steps = outcome.steps
    lanes = tuple(
        Lane(slot, name, f"{name} (pid {outcome.pids[slot]})" if slot < len(outcome.pids)
             else name)
        for slot, name in enumerate(outcome.processes)
    )
    racing: set[int] = set()
    for update in story.lost_updates:
        racing.update((update.read_step, update.other_step, update.write_step))
    for notify in story.lost_notifies:
        racing.update((notify.notify_step, notify.wait_step))
    racing.update(story.enabling.steps)
    failure = outcome.failure
    last_own = max((i for i in story.shown if failure is not None
                    and steps[i].worker == failure.worker), default=-1)
    rows: list[Row] = []
    previous = -1
    for index in story.shown:
        if index > previous + 1:  # a row for every step number left out, even a process
            counts: dict[int, int] = {}  # beginning: the step column never jumps silently
            for step in steps[previous + 1:index]:
                counts[step.worker] = counts.get(step.worker, 0) + 1
            rows.append(LaneGap(previous + 1, index - 1, tuple(sorted(counts.items()))))
        step = steps[index]
        text = _plain_text(outcome, step)
        site = f" at {step.file}:{step.line}" if step.line > 0 else ""
        rows.append(LaneStep(index, step.worker, text, f"{text}{site}", index in racing,
                             violation=index == last_own))
        previous = index
    if failure is None:
        violation = f"{outcome.end.value}"
    else:
        violation = f"{failure.end.value}: {failure.message}"
        if failure.worker >= 0:
            violation += f"\n({outcome.who(failure.worker)}, after step {failure.after_step})"
    return Swimlane(title, lanes, tuple(rows), violation, len(steps))


def _plain_text(outcome: PlainOutcome, step: PlainStep) -> str:
    """``read counter.value = 0``; a start names the process it started."""
    if step.label.startswith("start ") and isinstance(step.value, int):
        return f"start {outcome.who(step.value)}"
    return f"{step.what} = {step.value!r}" if step.has_value else step.what
