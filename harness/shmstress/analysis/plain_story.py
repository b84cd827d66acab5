"""What a failing plain-code execution shows: the steps worth reading, and what they did.

Computed once, from the steps alone (no rendering): which steps to show (the
data and synchronisation steps, shortened around the failure when there are
many), and the patterns that name the bug: a *lost update* (a process reads a
value, another writes it, the first writes back what it computed from its
stale read) and a *lost notify* (a notify that came before its waiter waited),
and where a raised failure's race starts (``enabling``): the steps shown begin
there, not at the symptom.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shmstress.analysis.enabling import Enabling, accessed, enabling
from shmstress.plain.outcome import PlainEnd, PlainOutcome, PlainStep

SHOWN_WHOLE = 40  # an execution with at most this many steps worth reading is shown whole
TAIL = 16  # else: the steps before the failure, and every step of a pattern
_UNINTERESTING = ("begin ", "check on ")


@dataclass(frozen=True)
class LostUpdate:
    """``worker`` read ``what``, ``other`` wrote it, then ``worker`` wrote over that write."""

    what: str  # "counter.value", "counts[3]"
    worker: int
    read_step: int
    other: int
    other_step: int
    write_step: int


@dataclass(frozen=True)
class LostNotify:
    """``notifier`` notified ``condition`` before ``waiter`` began to wait on it."""

    condition: str
    notifier: int
    notify_step: int
    waiter: int
    wait_step: int


@dataclass(frozen=True)
class PlainStory:
    shown: tuple[int, ...]  # indexes of the steps to show, ascending
    lost_updates: tuple[LostUpdate, ...]
    lost_notifies: tuple[LostNotify, ...]
    enabling: Enabling = field(default_factory=Enabling)  # where the race starts


def lost_updates(steps: tuple[PlainStep, ...]) -> list[LostUpdate]:
    found: list[LostUpdate] = []
    last_read: dict[tuple[int, str], int] = {}  # (worker, what) -> step of its latest read
    last_write: dict[str, tuple[int, int]] = {}  # what -> (step, worker) of the latest write
    seen: set[str] = set()
    for index, step in enumerate(steps):
        access = accessed(step)
        if access is None:
            continue
        how, what = access
        if how != "wrote":
            last_read[(step.worker, what)] = index
            continue
        read_at = last_read.pop((step.worker, what), None)
        previous = last_write.get(what)
        if (read_at is not None and previous is not None and previous[1] != step.worker
                and previous[0] > read_at and what not in seen):
            seen.add(what)
            found.append(LostUpdate(what, step.worker, read_at, previous[1], previous[0],
                                    index))
        last_write[what] = (index, step.worker)
    return found


def lost_notifies(outcome: PlainOutcome) -> list[LostNotify]:
    failure = outcome.failure
    if failure is None or failure.end is not PlainEnd.NO_PROGRESS:
        return []
    found = []
    steps = outcome.steps
    for waiting in failure.waiting:
        if not waiting.label.startswith("wake on "):
            continue
        condition = waiting.label[len("wake on "):]
        began = max((i for i, s in enumerate(steps)
                     if s.worker == waiting.worker and s.label == f"wait on {condition}"),
                    default=-1)
        notifies = [i for i, s in enumerate(steps[:began])
                    if s.label == f"notify {condition}" and s.worker != waiting.worker]
        if began >= 0 and notifies:
            found.append(LostNotify(condition, steps[notifies[-1]].worker, notifies[-1],
                                    waiting.worker, began))
    return found


def failure_links(outcome: PlainOutcome) -> Enabling:
    """Where a raised failure's race starts (``enabling``); none for a wait that cannot end,
    whose story is who waits for what."""
    failure = outcome.failure
    if failure is None or failure.end is not PlainEnd.FAILED:
        return Enabling()
    return enabling(outcome.steps, failure.worker, failure.step)


def plain_story(outcome: PlainOutcome) -> PlainStory:
    """The steps to show start where the race starts, when the steps say where: the earliest
    step of a lost update or of a link to the failure's enabling step."""
    steps = outcome.steps
    updates = lost_updates(steps)
    notifies = lost_notifies(outcome)
    links = failure_links(outcome)
    keep = set(links.steps)
    for update in updates:
        keep.update((update.read_step, update.other_step, update.write_step))
    starts = [links.start, *(update.read_step for update in updates)]
    start = min((s for s in starts if s is not None), default=0)
    for notify in notifies:  # kept when folding, but a lost notify's story is the wait: whole
        keep.update((notify.notify_step, notify.wait_step))
    worth = [i for i, s in enumerate(steps)
             if i >= start and not s.label.startswith(_UNINTERESTING)]
    if len(worth) > SHOWN_WHOLE:
        keep.update(worth[-TAIL:])
        worth = [i for i in worth if i in keep]
    return PlainStory(tuple(worth), tuple(updates), tuple(notifies), links)
