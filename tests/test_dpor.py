"""DPOR on a simulated scheduler: it runs one schedule per order of conflicting steps.

The simulated programs are lists of reads, writes and lock operations on named
variables; an execution's *outcome* is what every read saw. Two schedules with the
same order of conflicting steps give the same outcome, so DPOR must reach every
outcome the unbounded exhaustive search reaches, in fewer executions when steps
commute.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from shmstress.bench.sctbench.programs import program
from shmstress.controlled.strategies import DporSpec, Exhaustive, ExhaustiveSpec, Strategy
from shmstress.controlled.strategies.base import UNBOUNDED, Observing
from shmstress.controlled.strategies.dpor import Dpor
from shmstress.core.access import EVERY, LOCK, Access, Footprint
from shmstress.plain.runner import Exploration
from shmstress.plain.runner import explore as explore_plain
from shmstress.repro.plain_bundle import from_json, from_outcome, to_json
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict

Op = tuple[str, str]  # ("read" | "write" | "acquire" | "release" | "set" | "wait", name)


@dataclass
class SimView:
    step: int = 0
    current: int = -1
    runnable: Sequence[int] = ()
    current_can_continue: bool = False
    workers: int = 0
    labels: dict[int, str] = field(default_factory=dict)

    def label(self, worker: int) -> str:
        return self.labels.get(worker, "")

    def who(self, worker: int) -> str:
        return f"w{worker}"

    def describe(self, worker: int) -> str:
        return f"w{worker}"


def _ids(programs: Sequence[Sequence[Op]]) -> dict[str, int]:
    names = sorted({name for program in programs for _, name in program})
    return {name: index for index, name in enumerate(names)}


def run_once(strategy: Strategy, programs: Sequence[Sequence[Op]], declare: bool = True,
             one_value: bool = False) -> tuple[tuple[tuple[int, str, int], ...], list[int]]:
    """One execution: (what every read saw), and the workers in order. A ``wait`` blocks
    until its event is ``set``, as ``Event.wait`` does in plain code. With ``one_value``
    every write stores 1 and its footprint says so (plain code's footprints carry values)."""
    ids = _ids(programs)
    memory: dict[str, int] = {}
    owner: dict[str, int] = {}
    flags: set[str] = set()
    positions = [0] * len(programs)
    seen: list[tuple[int, str, int]] = []
    footprints: list[Footprint] = []
    order: list[int] = []
    current = -1
    while True:
        def can_go(w: int) -> bool:
            kind, name = programs[w][positions[w]]
            return not ((kind == "acquire" and name in owner)
                        or (kind == "wait" and name not in flags))
        alive = [w for w in range(len(programs)) if positions[w] < len(programs[w])]
        runnable = [w for w in alive if can_go(w)]
        if not runnable:
            assert not alive, "the simulated programs deadlocked"
            break
        view = SimView(len(order), current, runnable, current in runnable, len(programs))
        worker, _ = strategy.next_task(view)
        assert worker in runnable
        kind, name = programs[worker][positions[worker]]
        positions[worker] += 1
        access: tuple[Access, ...] = ()
        if kind == "read":
            seen.append((worker, name, memory.get(name, 0)))
            access = (Access("var", ids[name], write=False),)
        elif kind == "write" and one_value:
            memory[name] = 1
            access = (Access("var", ids[name], write=True, value=1),)
        elif kind == "write":
            memory[name] = len(order) + 1
            access = (Access("var", ids[name], write=True),)
        elif kind == "acquire":
            owner[name] = worker
            access = (Access(LOCK, ids[name], write=True),)
        elif kind == "release":
            del owner[name]
            access = (Access(LOCK, ids[name], write=True),)
        elif kind in ("set", "wait"):
            flags.update([name] if kind == "set" else [])
            access = (Access("event", ids[name], write=kind == "set"),)
        footprints.append(Footprint(worker, access if declare else None))
        order.append(worker)
        current = worker
    if isinstance(strategy, Observing):
        strategy.observe(footprints)
    if one_value:
        return tuple(sorted(seen)), order
    return _values_by_writer(seen, order), order


def _values_by_writer(seen: list[tuple[int, str, int]],
                      order: list[int]) -> tuple[tuple[int, str, int], ...]:
    """What each read saw, named by the writing worker's own step count (stable across
    schedules), sorted so that independent orders compare equal."""
    def writer(value: int) -> int:
        return -1 if value == 0 else order[value - 1] * 1000 + order[:value].count(
            order[value - 1])
    return tuple(sorted((worker, name, writer(value)) for worker, name, value in seen))


def explore(strategy: Strategy, programs: Sequence[Sequence[Op]], limit: int = 5000,
            declare: bool = True,
            one_value: bool = False) -> tuple[int, set[tuple[tuple[int, str, int], ...]]]:
    executions, outcomes = 0, set()
    while executions < limit and strategy.new_execution():
        outcome, _ = run_once(strategy, programs, declare, one_value)
        outcomes.add(outcome)
        executions += 1
    assert executions < limit, "the search did not end"
    return executions, outcomes


INDEPENDENT = [
    [("write", "a"), ("write", "a2"), ("read", "x")],
    [("write", "b"), ("write", "b2"), ("read", "x")],
    [("write", "x"), ("write", "c")],
]
LOCKED = [
    [("acquire", "m"), ("read", "n"), ("write", "n"), ("release", "m"), ("read", "z")],
    [("acquire", "m"), ("read", "n"), ("write", "n"), ("release", "m"), ("write", "z")],
    [("write", "y"), ("read", "z"), ("write", "y")],
]
REORDER = [  # reorder_bad: two writers of (a, b), a checker between them
    [("write", "a"), ("write", "b")],
    [("write", "a"), ("write", "b")],
    [("read", "a"), ("read", "b")],
]


WAITING = [  # a waiter let go by the set it races with, beside writers it does race with
    [("write", "x"), ("set", "e"), ("write", "y")],
    [("wait", "e"), ("read", "x"), ("read", "y")],
    [("write", "x"), ("write", "y")],
]


LET_GO = [  # the waiter is let go by the set, yet its read races with a write after it
    [("wait", "e"), ("acquire", "m"), ("read", "x"), ("release", "m"), ("write", "y")],
    [("write", "x"), ("read", "x"), ("read", "x")],
    [("set", "e"), ("read", "y")],
]


def test_dpor_reaches_every_outcome_with_fewer_executions() -> None:
    for programs in (INDEPENDENT, LOCKED, REORDER, WAITING, LET_GO):
        full, every = explore(Exhaustive(1, bound=99), programs)
        reduced, found = explore(Dpor(1), programs)
        assert found == every, programs
        assert reduced < full, (reduced, full)
        _, every = explore(Exhaustive(1, bound=99), programs, one_value=True)
        _, found = explore(Dpor(1), programs, one_value=True)
        assert found == every, programs


def _random_programs(seed: int) -> list[list[Op]]:
    """Two or three workers of reads and writes of up to three variables, critical sections
    under one lock, and waits for events that the first worker (which never waits) sets."""
    rng = random.Random(seed)
    names = ["x", "y", "z"][:rng.randint(1, 3)]
    programs: list[list[Op]] = []
    workers = rng.randint(2, 3)
    for worker in range(workers):
        ops: list[Op] = []
        for _ in range(rng.randint(1, 5 - workers)):
            access: Op = (rng.choice(["read", "write"]), rng.choice(names))
            roll = rng.random()
            if roll < 0.2:
                ops += [("acquire", "m"), access, ("release", "m")]
            elif roll < 0.35:
                ops.append(("set", "e") if worker == 0 else ("wait", "e"))
            else:
                ops.append(access)
        programs.append(ops)
    if any(("wait", "e") in ops for ops in programs) and ("set", "e") not in programs[0]:
        programs[0].append(("set", "e"))
    return programs


def test_dpor_reaches_every_outcome_of_random_programs() -> None:
    """What h-dpor checked on 710 programs once, kept on a few seeded ones: the waits, the
    locks and the writes of one value (``_valued_run``) included."""
    for seed in range(40):
        programs = _random_programs(seed)
        for one_value in (False, True):
            _, every = explore(Exhaustive(1, bound=99), programs, one_value=one_value)
            _, found = explore(Dpor(1), programs, one_value=one_value)
            assert found == every, (seed, one_value, programs)


def test_dpor_without_footprints_is_exhaustive() -> None:
    """Undeclared accesses conflict with everything: every schedule's outcome is reached."""
    _, every = explore(Exhaustive(1, bound=99), REORDER)
    _, found = explore(Dpor(1), REORDER, declare=False)
    assert found == every


def test_dpor_preemption_bound_shrinks_the_search() -> None:
    unbounded, _ = explore(Dpor(1), LOCKED)
    bounded, _ = explore(Dpor(1, bound=0), LOCKED)
    assert bounded < unbounded


def test_dpor_same_seed_same_schedules() -> None:
    def schedules(seed: int) -> list[list[int]]:
        strategy, out = Dpor(seed), []
        while strategy.new_execution():
            out.append(run_once(strategy, REORDER)[1])
        return out
    first = schedules(5)
    assert len(first) > 1
    assert schedules(5) == first
    assert Dpor(5).next_u64() == Dpor(5).next_u64()


# -- plain code: the session feeds the strategy its footprints ----------------------------
DPOR_SPEC = DporSpec(bound=UNBOUNDED)


def test_dpor_finds_account_bad_before_bounded_exhaustive_search() -> None:
    """account_bad fails only if check_result (started first) takes the lock last: DPOR
    tries only the orders of the critical sections, exhaustive search every interleaving."""
    spec = program("account_bad").spec()
    found = explore_plain(spec, Exploration(DPOR_SPEC, 0, 60))
    assert found.failing is not None and found.failing.failure is not None
    assert "balance" in found.failing.failure.message
    assert found.strategy.name == "dpor"
    within = explore_plain(spec, Exploration(ExhaustiveSpec(bound=1), 0,
                                       found.executions))
    assert within.failing is None

    bundle = from_json(json.loads(json.dumps(to_json(from_outcome(
        "account_bad", spec, found.strategy, 0, found.failing_index, found.failing)))))
    assert bundle.strategy == DPOR_SPEC
    report = replay_plain(bundle)
    assert report.verdict is Verdict.REPRODUCED, report.detail


def test_dpor_completes_the_search_of_a_correct_program() -> None:
    spec = program("queue_ok").spec()
    first = explore_plain(spec, Exploration(DPOR_SPEC, 0, 100))
    assert first.exhausted and first.failing is None
    assert first.executions > 1
    assert set(first.ends) == {"finished"}
    again = explore_plain(spec, Exploration(DPOR_SPEC, 7, 100))  # seedless: the same search
    assert again.executions == first.executions


def test_writes_of_one_value_commute_but_not_with_readers() -> None:
    one, again = Access("var", 0, True, value=1), Access("var", 0, True, value=1)
    other = Access("var", 0, True, value=2)
    unknown = Access("var", 0, True)
    read = Access("var", 0, False)
    assert not one.conflicts(again)  # either order leaves 1
    assert one.conflicts(other) and one.conflicts(unknown) and unknown.conflicts(unknown)
    assert one.conflicts(read) and read.conflicts(one)  # the reader sees 1 after it



def test_conflicts_needs_one_object_and_a_writer_and_values_of_one_type() -> None:
    """What the inlined ``Access.conflicts`` keeps of ``overlaps`` and the value test."""
    write = Access("var", 0, True, value=1)
    assert not Access("var", 0, False).conflicts(Access("var", 0, False))  # two reads
    assert not write.conflicts(Access("var", 1, True, value=2))  # another object
    assert not write.conflicts(Access("lock", 0, True, value=2))  # another kind
    assert write.conflicts(Access("var", EVERY, False)) and Access(
        "var", EVERY, True).conflicts(Access("var", 5, False))  # every object of the kind
    assert write.conflicts(Access("var", 0, True, value=True))  # 1 and True: two types
    assert write.conflicts(Access("var", 0, True, value=1.0))
    assert not Access("var", EVERY, True, value=3).conflicts(Access("var", 2, True, value=3))

VALUED = [  # two setters of one value and a checker: reorder_bad, with the values it writes
    [("write", "a"), ("write", "b")],
    [("write", "a"), ("write", "b")],
    [("read", "a"), ("read", "b")],
]


def _valued_run(strategy: Strategy,
                programs: Sequence[Sequence[Op]]) -> tuple[tuple[int, str, int], ...]:
    """One execution where every write stores 1, its footprints saying so as plain code's
    do: what each read saw."""
    return run_once(strategy, programs, one_value=True)[0]


def test_dpor_with_written_values_reaches_every_outcome_in_fewer_executions() -> None:
    """The setters' orders among themselves change nothing the checker can see: DPOR runs
    fewer schedules than without values, and still every pair of values the checker can
    read (the half-written (1, 0) among them)."""
    every = set()
    full = Exhaustive(1, bound=99)
    while full.new_execution():
        every.add(_valued_run(full, VALUED))
    dpor, found, executions = Dpor(1), set(), 0
    while dpor.new_execution():
        found.add(_valued_run(dpor, VALUED))
        executions += 1
    assert found == every and ((2, "a", 1), (2, "b", 0)) in found
    plain, _ = explore(Dpor(1), VALUED)  # every write a distinct value
    assert executions < plain, (executions, plain)


STALE = [  # the second write of 1 finds 1 there, yet it can run before the read
    [("read", "z"), ("write", "z"), ("write", "y")],
    [("write", "z")],
]


def test_a_write_of_the_value_already_there_still_races_with_a_reader() -> None:
    """In the first schedule the second worker's write stores the 1 already there; it
    commutes with the first worker's write of 1, and so can still run before the read,
    which then sees 1: both values must be reached."""
    dpor, found = Dpor(1), set()
    while dpor.new_execution():
        found.add(_valued_run(dpor, STALE))
    assert found == {((0, "z", 0),), ((0, "z", 1),)}


def test_start_does_not_poll_the_children_started_before() -> None:
    """``Process.start``'s sweep of finished children is no step: reorder_3_bad's main
    process takes only its starts and joins, so DPOR's first pass is not multiplied by
    every start racing every earlier child's exit."""
    found = explore_plain(program("reorder_3_bad").spec(), Exploration(DPOR_SPEC, 0, 60))
    assert found.failing is not None
    labels = {step.label for step in found.failing.steps}
    assert {label for label in labels if label.startswith(("start ", "join "))}
    assert not [label for label in labels if label.startswith("check on ")], labels


def test_dpor_finds_reorder_10_bad_with_one_preemption() -> None:
    """The checker must run between one setter's two writes, after nine setters started:
    every setter's write of b races with the checker's read (writes of one value do not
    order each other), and the race's own worker, the checker, is tried first, so the pass
    of one preemption finds it (before, DPOR missed it within 300 executions)."""
    found = explore_plain(program("reorder_10_bad").spec(),
                          Exploration(DporSpec(bound=1), 0, 30))
    assert found.failing is not None and found.failing.failure is not None
    assert "half-written" in found.failing.failure.message


def test_choices_filed_from_one_execution_share_its_lists() -> None:
    """Every untried choice keeps the execution it was found in, so that it can replay its
    prefix: kept as one copy per execution, cut after its deepest choice, not a copy of the
    prefix per choice, which grew by megabytes an execution where a worker spins."""
    spinning = [[("read", "x"), ("write", "x")] * 6 for _ in range(3)]
    strategy, executions = Dpor(1), 0
    while executions < 60 and strategy.new_execution():
        run_once(strategy, spinning)
        executions += 1
    kept = [entry[2] for entry in strategy._pending] + [entry[1] for entry in strategy._deferred]
    assert len(kept) > executions  # more choices than executions: sharing matters here
    lists = {id(execution.trail): (execution.trail, execution.taken) for execution in kept}
    assert len(lists) <= executions
    steps = sum(len(program) for program in spinning)
    for choices, taken in lists.values():
        assert len(choices) == len(taken) <= steps
