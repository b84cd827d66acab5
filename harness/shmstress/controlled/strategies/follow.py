"""Follow: steer an execution toward a log's lines, matching its records as they are made.

One execution is one random walk that leans toward the worker that may log the
next expected line (``log_match``): after each step the records it made are
offered to the matching; a record that fits the next line is matched (always,
where the log may not have left it out; mostly, where it may have, so that a
later occurrence gets its chance in another execution); a record that puts the
execution off the log ends it at once (``ScheduleEnded``), which makes a failed
try cost the steps up to where it left the log, not a whole execution. Which
line each execution got to, and what it did instead, is kept for the report.

An execution may start from a ``Prefix`` of an earlier one: its seed, its first
steps and which of their records it matched. The search keeps the prefixes that
got furthest into the log and goes on from them (a frontier, as in go-explore
searches), so a line that is hard to reach is reached once, not once per try.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from shmstress.controlled.log_match import ANYWHERE, MARKED, Matching, Offer, Seen, Target
from shmstress.controlled.strategies.base import (
    ScheduleEnded,
    SchedulerView,
    StrategySpec,
)

TAKE = (0.2, 0.95)
"""Where the log may have left a line out, the chance a fitting record is taken as it: drawn
per execution from this range, so that some executions let several occurrences pass (the
log's line may be of a later one) and others take the first."""
STEER = (0.2, 0.8)
"""The chance a step goes to a worker that may log the next expected line, drawn per
execution: the next line's worker may need the others to go first (a consumer needs an item)."""
AHEAD = (0.02, 0.4)
"""The weight of a step by a worker that already logged lines and whose next line comes
later than the next one (it may log it too early), drawn per execution; others weigh 1."""
FIRST_SKIPS = 3
"""The log's first line may be of a late occurrence (whatever came before it is not in the
log): each execution lets 0 to this many fitting records pass before it takes one."""
READY = (0.8, 0.95)
"""The chance a step goes to a worker that may log the next line and waits at its point,
drawn per execution (going later lets the others' unlogged steps come first)."""
MOMENTUM = 2
"""After a worker logged a matched line it may go on for 0 to this many steps first, as a
thread does between two of its log calls (its unlogged steps are most often right there)."""
STALL = {MARKED: 150, ANYWHERE: 600}
"""Steps without a matched line after which an execution is given up: a log with lines cut
anywhere may have lost hundreds of steps between two it kept."""
LONELY = 30
"""Steps in a row where one worker alone may go and it cannot log the next line (the others
would log what the log does not have there) after which an execution is given up."""
"""Steps without a matched line after which an execution is given up."""
RECENT = 8
"""Steps of a worker kept to say what it did instead of the expected line."""


@dataclass(frozen=True)
class Prefix:
    """The start of an earlier execution: its seed, the worker of each step, and the
    records (seq, sub) it matched to lines."""

    seed: int
    steps: tuple[int, ...]
    matched: frozenset[tuple[int, int]]


@dataclass(frozen=True)
class Miss:
    """Where an execution left the log: the expected line, the worker that logged (or was
    about to log) what the log does not have there, that message, and the worker's steps
    since its last matched line (labels, oldest first). No worker: it ran out of steps."""

    expected: int  # index into the target's lines
    worker: int | None = None
    message: str = ""
    recent: tuple[str, ...] = ()
    waiting: bool = False  # the worker had not logged it yet: it waited to, when it ended


@dataclass(frozen=True)
class FollowSpec(StrategySpec):
    """A schedule that follows a log's lines (``shmstress import-log``)."""

    name = "follow"


class Follow:
    def __init__(self, target: Target, reader: Callable[[int | None], Sequence[Seen]],
                 roles: Sequence[str], vocal: Callable[[str], str], seed: int,
                 max_steps: int) -> None:
        self.target = target
        self._reader = reader  # a worker's records since the last call (None: everyone's)
        self._roles = tuple(roles)  # worker -> role
        self._vocal = vocal  # a point's label -> the message it logs as
        self._rng = random.Random(f"shmstress:follow:{seed}")
        self._max_steps = max_steps
        self._stall = STALL[target.gaps]
        self.spec = FollowSpec()
        self.matching = Matching(target)
        self.miss: Miss | None = None
        self._recent: dict[int, list[str]] = {}
        self._seed = 0
        self._take = self._steer = self._ahead = self._ready = 0.5
        self._skips = 0
        self._last_match = 0
        self._momentum = (-1, 0)  # (worker, steps it goes on for)
        self._lonely = 0
        self._prefix = Prefix(0, (), frozenset())
        self.taken: list[int] = []  # the worker of each step of this execution
        self.matched_at: list[tuple[int, int]] = []  # (seq, sub) of each matched record

    def start_from(self, prefix: Prefix) -> None:
        """Make the next execution begin as ``prefix`` says (after ``new_execution``)."""
        self._prefix = prefix
        self._seed = prefix.seed

    def prefix(self, lines: int) -> Prefix:
        """This execution up to the step that matched its ``lines``-th line."""
        seq = self.matched_at[lines - 1][0]
        return Prefix(self._seed, tuple(self.taken[: seq + 1]),
                      frozenset(self.matched_at[:lines]))

    def new_execution(self) -> bool:
        self.matching = Matching(self.target)
        self.miss = None
        self._recent = {}
        self._prefix = Prefix(0, (), frozenset())
        self.taken = []
        self.matched_at = []
        rng = self._rng
        self._seed = rng.getrandbits(63)
        self._take, self._steer = rng.uniform(*TAKE), rng.uniform(*STEER)
        self._ahead, self._ready = rng.uniform(*AHEAD), rng.uniform(*READY)
        self._skips = rng.randrange(FIRST_SKIPS + 1)
        self._last_match = 0
        self._momentum = (-1, 0)
        self._lonely = 0
        return True

    def next_u64(self) -> int:
        return self._seed

    def finish(self) -> None:
        """Offer the records of the last step (the execution ended after it)."""
        with contextlib.suppress(ScheduleEnded):
            self._consume(None, -1)

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        if view.current >= 0:
            self._consume(view.current, view.step)
        worker = self._choose(view)
        self.taken.append(worker)
        return worker, 1

    def _choose(self, view: SchedulerView) -> int:
        if view.step < len(self._prefix.steps):
            return self._prefix.steps[view.step]
        matching = self.matching
        if matching.done:
            if view.step - self._last_match > self._stall:  # matched, and nothing broke since
                raise ScheduleEnded
            return self._rng.choice(view.runnable)
        expected = matching.target.lines[matching.next]
        if view.step >= self._max_steps or view.step - self._last_match > self._stall:
            self._give_up(view, expected.thread)
        runnable = view.runnable
        going, steps = self._momentum
        if steps and going in runnable and not self._off(view, going, expected.message):
            self._momentum = (going, steps - 1)
            return going
        quiet = [w for w in runnable if not self._off(view, w, expected.message)]
        if not quiet:  # whoever goes logs what the log does not have: the one due first
            due = matching.thread_worker.get(expected.thread, -1)
            worker = due if due in runnable else runnable[0]
            self.miss = Miss(matching.next, worker, self._vocal(view.label(worker)),
                             (*self._recent.get(worker, ()), view.label(worker))[-RECENT:],
                             waiting=True)
            raise ScheduleEnded
        players = [w for w in quiet
                   if matching.may_play(w, self._roles[w], expected.thread)]
        self._lonely = self._lonely + 1 if len(quiet) == 1 and not players else 0
        if self._lonely > LONELY:
            self._give_up(view, expected.thread)
        ready = [w for w in players if self._vocal(view.label(w)) == expected.message]
        if ready and self._rng.random() < self._ready:
            return self._rng.choice(ready)
        if players and self._rng.random() < self._steer:
            return self._rng.choice(players)
        bound = matching.worker_thread
        vocabulary = matching.target.vocabulary
        weights = [self._ahead if w in bound or self._vocal(view.label(w)) in vocabulary
                   else 1.0 for w in quiet]
        return self._rng.choices(quiet, weights)[0]

    def _give_up(self, view: SchedulerView, thread: int) -> NoReturn:
        """End an execution that does not get to the next line: naming the worker that
        plays its thread, and where it waits, if one does."""
        due = self.matching.thread_worker.get(thread, -1)
        if due in view.runnable:
            label = view.label(due)
            self.miss = Miss(self.matching.next, due, self._vocal(label),
                             (*self._recent.get(due, ()), label)[-RECENT:], waiting=True)
        else:
            self.miss = Miss(self.matching.next)
        raise ScheduleEnded

    def _off(self, view: SchedulerView, worker: int, message: str) -> bool:
        """Would ``worker``'s next point log one of the log's messages where it has none?"""
        logs_as = self._vocal(view.label(worker))
        return (logs_as != message and logs_as in self.matching.target.vocabulary
                and not self.matching.in_gap())

    def _consume(self, worker: int | None, step: int) -> None:
        matching = self.matching
        for seen in self._reader(worker):
            recent = self._recent.setdefault(seen.worker, [])
            offer = matching.offer(seen)
            if offer is Offer.MATCHES and not self._takes(seen):
                offer = Offer.FREE if matching.in_gap() else Offer.OFF
            if offer is Offer.MATCHES:
                matching.take(seen)
                self.matched_at.append((seen.seq, seen.sub))
                self._momentum = (seen.worker, self._rng.randrange(MOMENTUM + 1))
                recent.clear()
                self._last_match = step
                continue
            recent.append(seen.label)
            del recent[:-RECENT]
            if offer is Offer.OFF:
                self.miss = Miss(matching.next, seen.worker, seen.message, tuple(recent))
                raise ScheduleEnded

    def _takes(self, seen: Seen) -> bool:
        """Is a record that fits the next line taken as it? In a prefix, as it was; where
        the log cannot have left it out, always; else by the execution's draws."""
        if seen.seq < len(self._prefix.steps):
            return (seen.seq, seen.sub) in self._prefix.matched
        if not self.matching.in_gap():
            return True
        if self.matching.next == 0 and self._skips:
            self._skips -= 1
            return False
        return self._rng.random() < self._take
