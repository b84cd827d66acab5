"""The linearizability checker's benchmark: how long it takes on a history of a thousand
operations over twenty keys of a key-value map, one linearizable and one not (issue 31's goal:
under 2 s on this machine). The histories are generated, not recorded: the checker is timed
on its own, without the processes that would record one.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from shmstress.analysis.linearizability import Operation, apply, check

GOAL_S = 2.0  # for the linearizable history of OPERATIONS operations over KEYS keys
OPERATIONS = 1000
KEYS = 20
PROCESSES = 5
NEVER_WRITTEN = -1  # a value no generated put writes: a get returning it is unexplainable


class KeyValueMap:
    """The sequential model: a map whose put returns the value it replaced."""

    def __init__(self) -> None:
        self.items: dict[object, object] = {}

    def put(self, key: object, value: object) -> object:
        previous = self.items.get(key)
        self.items[key] = value
        return previous

    def get(self, key: object) -> object:
        return self.items.get(key)

    def __shmstress_state__(self) -> frozenset[tuple[object, object]]:
        return frozenset(self.items.items())


def by_key(op: Operation) -> object:
    return op.args[0]


def linearizable_history(model: Callable[[], Any], calls: Sequence[tuple[str, tuple[object, ...]]],
                         processes: int, rng: random.Random, *, spread: int = 3,
                         pending: float = 0.0) -> list[Operation]:
    """A history that is linearizable by construction: ``calls`` run in turn on one
    ``model()``, the i-th at point ``2 * i`` of the clock, each given to a random process and
    an interval around its point as wide as ``spread`` points either side allows (a
    process's intervals never overlap, as a real one's cannot). With probability
    ``pending``, a process's last operation is left without a response (it took effect), and
    another invoked after it that never took effect is added."""
    state = model()
    owners = [rng.randrange(processes) for _ in calls]
    points = [2 * i for i in range(len(calls))]
    following: dict[int, int] = {}  # an operation's index -> its process's next one
    last: dict[int, int] = {}
    for index, owner in enumerate(owners):
        if owner in last:
            following[last[owner]] = index
        last[owner] = index
    free_from = {owner: -2 * spread - 1 for owner in range(processes)}
    history: list[Operation] = []
    for index, (name, args) in enumerate(calls):
        owner, point = owners[index], points[index]
        invoked = rng.randint(max(free_from[owner], point - 2 * spread), point)
        until = points[following[index]] - 1 if index in following else point + 2 * spread
        responded = rng.randint(point, min(point + 2 * spread, until))
        free_from[owner] = responded + 1
        op = Operation(owner, name, args, None, invoked, responded)
        history.append(replace(op, result=apply(state, op)))
    for owner, index in last.items():
        if rng.random() < pending:
            history[index] = replace(history[index], responded=None)
            name, args = calls[rng.randrange(len(calls))]
            history.append(Operation(owner, name, args, None,
                                     history[index].invoked + 1, None))
    return history


def key_value_calls(operations: int, keys: int, rng: random.Random) -> list[
        tuple[str, tuple[object, ...]]]:
    """Random puts (of values no put repeats) and gets over ``keys`` keys."""
    return [("put", (rng.randrange(keys), index)) if rng.random() < 0.5
            else ("get", (rng.randrange(keys),)) for index in range(operations)]


def unexplainable(history: Sequence[Operation], rng: random.Random) -> list[Operation]:
    """``history`` with one get's result replaced by a value no put wrote."""
    gets = [i for i, op in enumerate(history) if op.name == "get" and not op.pending]
    spoilt = list(history)
    index = rng.choice(gets)
    spoilt[index] = replace(spoilt[index], result=NEVER_WRITTEN)
    return spoilt


@dataclass(frozen=True)
class CheckTiming:
    what: str
    operations: int
    keys: int
    linearizable: bool
    seconds: float
    states: int
    partitions: int


@dataclass
class LinearizabilityBench:
    timings: list[CheckTiming]


def run_linearizability_bench(seed: int, log: Callable[[str], None]) -> LinearizabilityBench:
    rng = random.Random(seed)
    history = linearizable_history(KeyValueMap, key_value_calls(OPERATIONS, KEYS, rng),
                                   PROCESSES, rng, spread=4)
    spoilt = unexplainable(history, rng)
    cases = [  # the same two histories without partitions: what partitioning is worth
        ("linearizable, partitioned by key", history, by_key),
        ("one get unexplainable, partitioned by key", spoilt, by_key),
        ("linearizable, not partitioned", history, None),
        ("one get unexplainable, not partitioned", spoilt, None),
    ]
    timings = []
    for what, ops, key in cases:
        log(f"linearizability: {what}")
        started = time.perf_counter()
        verdict = check(ops, KeyValueMap, key=key)
        seconds = time.perf_counter() - started
        timings.append(CheckTiming(what, len(ops), KEYS, verdict.linearizable, seconds,
                                   verdict.states_explored, verdict.partitions_checked))
    return LinearizabilityBench(timings)


def render_linearizability_bench(bench: LinearizabilityBench) -> list[str]:
    lines = [f"linearizability checker ({PROCESSES} processes, a key-value map; goal for the "
             f"linearizable history partitioned by key: < {GOAL_S:g} s):"]
    for t in bench.timings:
        goal = ""
        if t.linearizable and t.partitions > 1:
            goal = f"; goal: {'met' if t.seconds < GOAL_S else 'NOT met'}"
        verdict = "linearizable" if t.linearizable else "not linearizable"
        lines.append(f"  {t.what:44} {t.operations:>5} ops, {t.keys} keys: {t.seconds:6.3f} s "
                     f"({verdict}, {t.states:,} states, {t.partitions} partition"
                     f"{'' if t.partitions == 1 else 's'} checked{goal})")
    return lines
