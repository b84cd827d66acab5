"""A violation explained as a short interleaving, derived from the recorded steps: data only.

The form is the one a developer writes under a log snippet in a commit
message: the initial state of the objects involved, one line per run of
consecutive steps of one worker, then what broke. Nothing here knows a race:
the window and objects come from ``focus``, the words from the tracker, and
the structure from the order of the recorded points and log calls. A worker
that still holds one of the objects when the operation breaks (a popped,
undelivered event) is named under the outcome. Where the focus found where the
race starts (``Focus.enabling``), the story begins there, tells every step a
link names, and each link is a line under the outcome. Where a ring wrapped, a
fact a lost record may have changed is not stated but kept *in doubt*, with
what the kept records last said, beside the losses that put it there: a
partial initial state says it is partial.
``render.explanation`` words it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from shmstress.analysis.facts import Setting
from shmstress.analysis.focus import Focus
from shmstress.core.trace import Record, Recording, Step, step_number
from shmstress.core.workers import WorkerInfo, describe_worker
from shmstress.plugin.words import Subject, Words


@dataclass(frozen=True)
class StepRun:
    """Consecutive steps of one worker that matter, as the tracker words them."""

    worker: str  # "clerk #1 (pid 18778)"
    worker_id: int
    steps: tuple[str, ...]
    first_seq: int
    last_seq: int


@dataclass(frozen=True)
class InDoubt:
    """A fact of the initial state that a record the rings lost may have changed: what the
    records kept last say, and where they said it, never stated as the state it was in."""

    phrase: str  # 'device "x" is not in allocated devices'
    seq: int  # the point that set it; -1: the tracker's initial facts, at the run's start
    worker: str | None  # who set it there


@dataclass(frozen=True)
class LostRecords:
    """A worker's oldest records, overwritten in its ring: its first ``points`` points and
    their log calls, up to point ``through``."""

    worker: str
    points: int
    through: int


@dataclass(frozen=True)
class Explanation:
    invariant: str
    initial_state: tuple[str, ...]  # one phrase per object whose state is known
    runs: tuple[StepRun, ...]
    outcome: str
    start: int
    end: int
    notes: tuple[str, ...] = ()  # what the recording lost, if anything
    still_held: tuple[str, ...] = ()  # objects a worker still held when it broke
    links: tuple[str, ...] = ()  # where the race starts, then each link back from the failure
    in_doubt: tuple[InDoubt, ...] = ()  # facts of the initial state lost records may change
    lost: tuple[LostRecords, ...] = ()  # the losses that put them in doubt

    @property
    def partial(self) -> bool:
        """Is the initial state known only in part (a ring wrapped before the window)?"""
        return bool(self.in_doubt)


@dataclass(frozen=True)
class StoryStep:
    """One worded step of the window that matters to the story."""

    worker: int
    seq: int
    phrase: str
    opens: frozenset[tuple[Subject, str]]  # holdings this step begins
    closes: frozenset[tuple[Subject, str]]  # ... and ends


def story(found: Focus, tape: Sequence[Step]) -> tuple[StoryStep, ...]:
    """The window's worded steps that matter.

    A holding a worker begins and ends within one run of its own steps was seen
    by nobody else, so the step that began it is not worth a word there.
    """
    runs: list[list[StoryStep]] = []
    for step in _steps(found, tape):
        if runs and runs[-1][-1].worker == step.worker:
            runs[-1].append(step)
        else:
            runs.append([step])
    return tuple(
        step for run in runs for index, step in enumerate(run)
        if not step.opens or not any(step.opens & later.closes for later in run[index + 1 :])
    )


def explanation(
    found: Focus, told: Sequence[StoryStep], workers: Sequence[WorkerInfo], recording: Recording
) -> Explanation:
    """The explanation of ``found`` from its story ``told``."""
    chosen = found.violation
    known, in_doubt, lost = _initial_state(found, workers)
    return Explanation(
        invariant=chosen.invariant,
        initial_state=known,
        runs=_runs(told, workers),
        outcome=found.outcome or chosen.message,
        start=found.start,
        end=found.end,
        notes=_notes(found, recording),
        still_held=tuple(
            _holding(found, subject, fact, setting.worker, workers)
            for subject, fact, setting in found.history.held(found.end + 1)
        ),
        links=_links(found, workers),
        in_doubt=in_doubt,
        lost=lost,
    )


def _runs(told: Sequence[StoryStep], workers: Sequence[WorkerInfo]) -> tuple[StepRun, ...]:
    """The story's steps collapsed into runs of one worker."""
    out: list[StepRun] = []
    for step in told:
        if out and out[-1].worker_id == step.worker:
            last = out[-1]
            phrases = last.steps if last.steps[-1] == step.phrase else (*last.steps, step.phrase)
            out[-1] = StepRun(last.worker, step.worker, phrases, last.first_seq, step.seq)
        else:
            out.append(StepRun(describe_worker(step.worker, workers), step.worker, (step.phrase,),
                               step.seq, step.seq))
    return tuple(out)


def _steps(found: Focus, tape: Sequence[Step]) -> Iterator[StoryStep]:
    """Worded steps of the window: the involved objects' and the operation's own."""
    words = found.words
    linked = found.enabling.steps
    for worker, seq, label, fields, record in _window(found, tape):
        if seq in linked and record is not None and record.sub == 0:  # the point, not its logs
            opens, closes = _holdings_changed(words, label, fields)
            yield StoryStep(worker, seq, words.step(label, fields) or label, opens, closes)
            continue
        if record is not None:
            involved, elsewhere = found.relevance(record)
            # Others' steps on the objects; the worker's own steps unless about other objects.
            if not involved and not found.own_context(record, elsewhere):
                continue
        elif worker != found.worker or seq < found.operation_start:
            continue  # known from the tape only: no fields say what it touched
        phrase = words.step(label, fields)
        if phrase is None:
            continue
        opens, closes = _holdings_changed(words, label, fields)
        yield StoryStep(worker, seq, phrase, opens, closes)


def _window(
    found: Focus, tape: Sequence[Step]
) -> Iterator[tuple[int, int, str, dict[str, object], Record | None]]:
    """(worker, seq, label, fields, record or None) from the start to the end of the window.

    A point overwritten in its ring still has its step on the schedule tape
    (worker and label, no fields); its log calls are gone with it.
    """
    seen = found.start
    for record in found.window:
        for seq in range(seen, record.seq):
            if seq < len(tape):
                step = tape[seq]
                yield step.worker, seq, step.label, {}, None
        seen = max(seen, record.seq + 1)
        yield record.worker, record.seq, found.label(record), dict(record.fields), record
    for seq in range(seen, min(found.end + 1, len(tape))):
        step = tape[seq]
        yield step.worker, seq, step.label, {}, None


def _holdings_changed(
    words: Words, label: str, fields: Mapping[str, object]
) -> tuple[frozenset[tuple[Subject, str]], frozenset[tuple[Subject, str]]]:
    changed = [
        (effect.holds, (effect.subject, effect.fact))
        for effect in (words.effects(label, fields) if fields else ())
        if effect.fact in words.holdings
    ]
    return (frozenset(key for holds, key in changed if holds),
            frozenset(key for holds, key in changed if not holds))


def _initial_state(
    found: Focus, workers: Sequence[WorkerInfo]
) -> tuple[tuple[str, ...], tuple[InDoubt, ...], tuple[LostRecords, ...]]:
    """Facts of the involved objects just before the window, and who holds any of them: the
    ones known, the ones a lost record may have changed (``FactHistory.doubted_by``), and the
    losses that put those in doubt."""
    words = found.words
    history = found.history
    known: dict[Subject, dict[str, bool]] = {subject: {} for subject in found.scope.subjects}
    doubted: list[InDoubt] = []
    doubters: set[int] = set()

    def doubt(phrase: str, setting: Setting) -> bool:
        losses = history.doubted_by(setting)
        if losses:
            doubters.update(loss.worker for loss in losses)
            doubted.append(InDoubt(phrase, setting.seq, None if setting.worker < 0
                                   else describe_worker(setting.worker, workers)))
        return bool(losses)

    for (subject, fact), setting in history.at(found.start).items():
        if fact in words.holdings:
            continue
        if not doubt(_state_phrase(words, _name(found, subject), {fact: setting.holds}),
                     setting):
            known.setdefault(subject, {})[fact] = setting.holds
    phrases = [
        _state_phrase(words, _name(found, subject), state)
        for subject, state in known.items()
        if state
    ]
    holdings = [
        phrase for subject, fact, setting in history.held(found.start)
        if not doubt(phrase := _holding(found, subject, fact, setting.worker, workers), setting)
    ]
    lost = tuple(LostRecords(describe_worker(loss.worker, workers), loss.points, loss.through)
                 for loss in history.losses if loss.worker in doubters)
    return (*phrases, *holdings), tuple(doubted), lost


def _state_phrase(words: Words, name: str, known: dict[str, bool]) -> str:
    order = [f for f in words.facts if f in known] + [f for f in known if f not in words.facts]
    return f"{name} is " + ", ".join(f if known[f] else f"not {f}" for f in order)


def _holding(
    found: Focus, subject: Subject, fact: str, worker: int, workers: Sequence[WorkerInfo]
) -> str:
    return f"{describe_worker(worker, workers)} {fact} {_name(found, subject)}"


def _name(found: Focus, subject: Subject) -> str:
    return found.scope.names.get(subject) or found.words.name(subject)


def _notes(found: Focus, recording: Recording) -> tuple[str, ...]:
    notes = []
    if found.horizon > found.start:
        notes.append(
            f"records before point {step_number(found.horizon)} were overwritten in a ring (raise "
            "--ring-size); steps there are known from the schedule tape without their fields"
        )
    if found.end >= len(recording.steps) and recording.tape_lost:
        notes.append(
            f"the schedule tape keeps the first {len(recording.steps):,} points and ended "
            "before the violation: the steps after it are known only from the rings"
        )
    return tuple(notes)


def _links(found: Focus, workers: Sequence[WorkerInfo]) -> tuple[str, ...]:
    """The enabling links in words: where the race starts, each stale read, each read of
    another worker's write (the form of ``render.plain_report``'s, with points for steps)."""
    links = found.enabling
    if links.start is None:
        return ()
    points = {record.seq: record for record in found.window if record.sub == 0}

    def who(worker: int) -> str:
        return describe_worker(worker, workers)

    def did(seq: int) -> str:
        record = points.get(seq)
        if record is None:
            return f"took point {step_number(seq)}"
        label = found.label(record)
        return found.words.step(label, dict(record.fields)) or label

    first = points.get(links.start)
    lines = [f"the race starts at point {step_number(links.start)}: "
             f"{who(first.worker) if first else 'a worker'} {did(links.start)}"]
    for stale in links.stale_reads:
        acted = ("failed" if stale.acted_step > found.end
                 else f"{did(stale.acted_step)} (point {step_number(stale.acted_step)})")
        lines.append(
            f"stale read of {stale.what}: {who(stale.reader)} {did(stale.read_step)} (point "
            f"{step_number(stale.read_step)}), {who(stale.writer)} {did(stale.write_step)} "
            f"(point {step_number(stale.write_step)}), then {who(stale.reader)} {acted} on what "
            "it had read")
    objects: dict[tuple[int, int, int, int], list[str]] = {}  # one line per read and write
    for link in links.reads_from:
        if not link.unwritten:
            key = (link.reader, link.read_step, link.writer, link.write_step)
            objects.setdefault(key, []).append(link.what)
    for (reader, read, writer, write), what in objects.items():
        lines.append(
            f"{who(reader)} {did(read)} (point {step_number(read)}): {' and '.join(what)} as "
            f"{who(writer)} left it at point {step_number(write)} ({did(write)})")
    return tuple(lines)
