"""The search behind ``shmstress import-log``: executions of the model that match a log.

One session of the sized scenario runs a few random executions first, to learn
which messages the tracker logs and which roles log each (a line no role logs
cannot be matched; a thread whose messages no one role logs cannot be one
worker). Then it runs ``Follow`` executions until one matches every line and
breaks an invariant, or the budget is spent: a match that breaks nothing is
kept, but the search goes on, since the log is of a failure. The executions
that left the log are counted by the line they got to and what they did there,
which is how the report says where the model and the log part.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from shmstress.controlled.execution import ExecutionOutcome, PhasePlan
from shmstress.controlled.log_match import Expected, Matching, Seen, Target, shown
from shmstress.controlled.runner import prepare, session_spec
from shmstress.controlled.session import Session
from shmstress.controlled.strategies import RandomWalk
from shmstress.controlled.strategies.follow import Follow, Miss, Prefix
from shmstress.core.config import RunConfig
from shmstress.core.shm import sweep_stale_segments
from shmstress.core.signals import interruptible
from shmstress.core.trace import Recording
from shmstress.core.workers import WorkerInfo
from shmstress.plugin.wording import wording_of
from shmstress.plugin.words import Words

FRESH = 0.25
"""The share of executions that start afresh rather than from a kept prefix."""
DEEPER = 0.5
"""The chance to start from the deepest kept prefixes rather than the next shallower."""
KEPT = 16
"""Prefixes kept per number of lines matched."""
TRIES = 8
"""Executions that start from one kept prefix."""
LEARNING_EXECUTIONS = 8
LEARNING_STEPS = 150
"""Random executions, and the steps each churns before it drains, that learn which roles log
which messages."""


MissKey = tuple[int, str, str, tuple[str, ...], bool]
Frontier = dict[int, list[tuple[Prefix, int]]]
"""Lines matched -> the prefixes kept that matched so many, each with its tries so far."""


@dataclass(frozen=True)
class SearchOptions:
    executions: int = 4000
    max_steps: int = 1500  # steps an execution may take before it gives up on the log
    seed: int = 1
    time_limit_s: float = 60.0
    pin: bool = False


@dataclass(frozen=True)
class Unmatched:
    line: Expected
    why: str


@dataclass(frozen=True)
class Match:
    """An execution that matched every line the model can log."""

    outcome: ExecutionOutcome
    matching: Matching
    recording: Recording
    execution: int  # its number among the search's executions, from 1


@dataclass(frozen=True)
class SearchResult:
    config: RunConfig
    workers: tuple[WorkerInfo, ...]
    target: Target
    unmatched: tuple[Unmatched, ...]
    match: Match | None  # a violating match if one was found, else the first match
    executions: int
    matches: int  # executions that matched every line
    deepest: int  # the most lines an execution matched
    misses: Mapping[int, Counter[MissKey]] = field(default_factory=dict)
    """Lines matched -> (line index, worker, message logged instead, its worker's steps
    since its last matched line, whether it was only about to log it) -> executions that
    left the log so."""
    elapsed_s: float = 0.0
    pids: tuple[int, ...] = ()

    @property
    def violating(self) -> bool:
        return self.match is not None and self.match.outcome.failed


class _Reader:
    """The records made since the last call, rendered through the words."""

    def __init__(self, session: Session, words: Words) -> None:
        self._session = session
        self._words = words
        self._roles = [w.role for w in session.spec.workers]
        self._at = [0] * len(self._roles)

    def reset(self) -> None:
        self._at = [0] * len(self._roles)

    def __call__(self, worker: int | None = None) -> list[Seen]:
        """The records ``worker`` made since the last call (None: every worker's): only the
        worker that took a step records in it."""
        recorder = self._session.recorder
        found = []
        for each in range(len(self._at)) if worker is None else (worker,):
            records, self._at[each] = recorder.records_from(each, self._at[each])
            found.extend(records)
        if worker is None:
            found.sort(key=lambda r: (r.seq, r.sub))
        seen = []
        for record in found:
            label = self._session.label_text(record.label)
            message, fields = self._words.event(label, record.fields)
            seen.append(Seen(record.seq, record.sub, record.worker, self._roles[record.worker],
                             label, message, {key: shown(value) for key, value in fields}))
        return seen


def _speakers(session: Session, reader: _Reader, seed: int) -> dict[str, set[str]]:
    """Message -> the roles seen logging it, from a few random executions."""
    spoken: dict[str, set[str]] = {}
    walk = RandomWalk(seed)
    plan = PhasePlan(LEARNING_STEPS)
    for _ in range(LEARNING_EXECUTIONS):
        walk.new_execution()
        reader.reset()
        session.execute(walk, walk.next_u64(), plan, record=True)
        for seen in reader():
            spoken.setdefault(seen.message, set()).add(seen.role)
    return spoken


def _target(lines: Sequence[Expected], spoken: Mapping[str, set[str]], words: Words,
            gaps: str) -> tuple[Target, tuple[Unmatched, ...]]:
    """The lines the model can log, each thread with the roles that log all its messages."""
    known = set(spoken) | {words.event(label, ())[0] for label in words.labels()}
    unmatched = [Unmatched(line, f"the tracker's words have no message {line.message!r}")
                 for line in lines if line.message not in known]
    kept = [line for line in lines if line.message in known]
    roles: dict[int, frozenset[str]] = {}
    for thread in {line.thread for line in kept}:
        messages = {line.message for line in kept if line.thread == thread}
        sets = [frozenset(spoken.get(message, ())) for message in messages]
        roles[thread] = frozenset.intersection(*sets) if sets else frozenset()
    for line in kept:
        if not roles[line.thread]:
            unmatched.append(Unmatched(line, f"no role logs every message of thread "
                                              f"{line.thread}"))
    matchable = [line for line in kept if roles[line.thread]]
    # a gap before a line the model cannot log is a gap before the next one it can
    gapped, pending = [], False
    for line in lines:
        pending = pending or line.gap_before
        if line in matchable:
            gapped.append(replace(line, gap_before=pending))
            pending = False
    unmatched.sort(key=lambda u: u.line.line)
    return (Target(tuple(gapped), roles, dict(words.kinds), gaps), tuple(unmatched))


def search(config: RunConfig, lines: Sequence[Expected], gaps: str,
           options: SearchOptions) -> SearchResult:
    """Look for an execution of ``config``'s scenario whose records hold ``lines`` in order."""
    config, tracker_cls, workers = prepare(config)
    words = wording_of(tracker_cls, config.params).words
    spec = session_spec(config, tracker_cls, workers, options.max_steps * 2, pin=options.pin)
    plan = PhasePlan(options.max_steps * 2)

    sweep_stale_segments()
    t0 = time.monotonic()
    match: Match | None = None
    executions = matches = 0
    misses: dict[int, Counter[MissKey]] = {}
    frontier: Frontier = {}
    rng = random.Random(f"shmstress:frontier:{options.seed}")
    with interruptible(), Session(spec) as session:
        reader = _Reader(session, words)
        spoken = _speakers(session, reader, options.seed)
        target, unmatched = _target(lines, spoken, words, gaps)
        vocabulary = target.vocabulary
        vocal: dict[str, str] = {}

        def logs_as(label: str) -> str:
            """The message a point logs as, told from its label alone (its fields are not
            known before it is taken): the label, if the log has it, else as the words
            render it without fields."""
            if label not in vocal:
                vocal[label] = label if label in vocabulary else words.event(label, ())[0]
            return vocal[label]

        follow = Follow(target, reader, [w.role for w in workers], logs_as, options.seed,
                        options.max_steps)
        while (executions < options.executions and target.lines
               and time.monotonic() - t0 < options.time_limit_s):
            follow.new_execution()
            start = _pick(frontier, rng)
            began = 0 if start is None else len(start.matched)
            if start is not None:
                follow.start_from(start)
            reader.reset()
            outcome = session.execute(follow, follow.next_u64(), plan, record=True)
            follow.finish()
            executions += 1
            reached = follow.matching.next
            if follow.matching.done and not outcome.failed:
                # every line, and nothing broke: what this execution chose after its start
                # keeps the failure away, so the prefixes it went through go; its start stays
                taken = follow.taken
                for depth, kept in frontier.items():
                    if depth > began:
                        kept[:] = [(prefix, tries) for prefix, tries in kept
                                   if prefix.seed != outcome.execution_seed
                                   or tuple(taken[:len(prefix.steps)]) != prefix.steps]
            elif reached:
                _keep(frontier, reached, follow.prefix(reached), rng)
            if follow.matching.done:
                matches += 1
                if match is None or (outcome.failed and not match.outcome.failed):
                    match = Match(outcome, follow.matching,
                                  session.recording(len(outcome.steps)), executions)
                    if outcome.failed:
                        break
                continue
            misses.setdefault(reached, Counter())[_described(follow.miss, workers)] += 1
        pids = session.pids
    deepest = len(target.lines) if matches else max(misses, default=0)
    return SearchResult(config, workers, target, unmatched, match, executions, matches,
                        deepest, misses, time.monotonic() - t0, pids)


def _pick(frontier: Frontier, rng: random.Random) -> Prefix | None:
    """Where the next execution starts: afresh now and then, else from a kept prefix, the
    deeper into the log the likelier."""
    if not frontier or rng.random() < FRESH:
        return None
    depths = sorted(frontier, reverse=True)
    depths = [depth for depth in depths if frontier[depth]]
    if not depths:
        return None
    chosen = next((depth for depth in depths if rng.random() < DEEPER), depths[-1])
    kept = frontier[chosen]
    index = rng.randrange(len(kept))
    prefix, tries = kept[index]
    if tries + 1 >= TRIES:  # its last try: a prefix that leads nowhere is not tried forever
        kept.pop(index)
    else:
        kept[index] = (prefix, tries + 1)
    return prefix


def _keep(frontier: Frontier, depth: int, prefix: Prefix, rng: random.Random) -> None:
    kept = frontier.setdefault(depth, [])
    if len(kept) < KEPT:
        kept.append((prefix, 0))
    else:
        kept[rng.randrange(KEPT)] = (prefix, 0)


def _described(miss: Miss | None, workers: Sequence[WorkerInfo]) -> MissKey:
    if miss is None:
        return (-1, "", "", (), False)
    if miss.worker is None:
        return (miss.expected, "", "", (), False)
    return (miss.expected, workers[miss.worker].describe(), miss.message, miss.recent,
            miss.waiting)
