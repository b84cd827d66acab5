"""Is a concurrent history linearizable against a sequential model? Wing-Gong/Lowe's search
with memoisation (the "WGL" algorithm, as Porcupine implements it) and Porcupine's
partitioning by key.

A history is a set of operations, each with its invocation and response on one total order
of events. It is linearizable when some sequential order of its operations (1) respects
real time: an operation that responded before another was invoked comes first, (2) makes a
fresh sequential model return, operation by operation, what each operation returned. An
operation that never responded (its process hung or died) is *pending*: it may have taken
effect at any point after its invocation, whatever it would have returned, or not at all.

The search (Lowe, "Testing for linearizability", 2017; Horn and Kroening's P-compositionality,
2015) walks the history's events in time order, lifting out an operation whose invocation
comes before every remaining response when the model agrees with it, and backtracking at the
first remaining response it meets. A cache of (the set of operations linearized, the model's
state) it has been in before cuts every path that reaches the same point a second way: it is
what makes the search practical. Linearizability is local (Herlihy and Wing): a history of
operations on independent keys is linearizable iff each key's sub-history is, so with ``key``
each partition is checked on its own, an exponential search turned into several small ones.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shmstress.core.errors import LinearizabilityBudgetError


@dataclass(frozen=True)
class Raised:
    """What an operation that raised returned: its exception's type name (and message, which
    is kept for the report but not compared, since messages carry addresses and counts that
    a model has no reason to reproduce)."""

    type_name: str
    message: str = field(default="", compare=False)

    @classmethod
    def of(cls, error: BaseException) -> Raised:
        return cls(type(error).__name__, str(error))

    def __str__(self) -> str:
        return f"{self.type_name}({self.message!r})" if self.message else f"{self.type_name}()"


@dataclass(frozen=True)
class Operation:
    """One operation of a history: who ran it, what it was called with and returned, and
    when it was invoked and responded on the history's one clock (step numbers)."""

    process: int  # the lane / worker, 0-based
    name: str  # the method of the model it is applied as
    args: tuple[object, ...]
    result: object  # what it returned, or a Raised for an exception
    invoked: int
    responded: int | None  # None: pending (never responded): it may or may not have happened

    def __hash__(self) -> int:
        # of the fields that are always hashable: args and results may be lists or dicts
        return hash((self.process, self.name, self.invoked, self.responded))

    @property
    def pending(self) -> bool:
        return self.responded is None

    def call(self) -> str:
        """The call as code reads it: ``put(1, 'a')``."""
        return f"{self.name}({', '.join(repr(arg) for arg in self.args)})"


@dataclass(frozen=True)
class Verdict:
    """The answer of ``check``, with the evidence either way."""

    linearizable: bool
    order: tuple[Operation, ...] | None  # a witness sequential order, when linearizable
    longest_prefix: tuple[Operation, ...]  # the longest linearizable prefix, when not
    stuck_at: tuple[Operation, ...]  # none of which could come next after that prefix
    expected: dict[Operation, object]  # what the model returned for each of them instead
    partitions_checked: int
    states_explored: int


def check(history: Sequence[Operation], model: Callable[[], Any], *,
          key: Callable[[Operation], Hashable] | None = None,
          max_states: int | None = None) -> Verdict:
    """Whether ``history`` is linearizable against a fresh ``model()`` per partition.

    An operation is applied as ``getattr(state, op.name)(*op.args)`` and its return value
    compared with ``op.result`` by ``==``; an exception the model raises is ``Raised.of`` it.
    With ``key``, the operations are partitioned by it and each partition checked on its own
    (the history is linearizable iff every partition is); the first partition that is not
    gives the evidence. ``max_states`` bounds the states explored over all partitions: past
    it, ``LinearizabilityBudgetError`` (no verdict is better than a wrong one).
    """
    partitions = _partitions(history, key)
    explored = 0
    orders: list[tuple[Operation, ...]] = []
    for checked, partition in enumerate(partitions, start=1):
        budget = None if max_states is None else max_states - explored
        outcome = _search(partition, model, budget)
        explored += outcome.states
        if outcome.order is None:
            return Verdict(False, None, outcome.longest, outcome.stuck, outcome.expected,
                           checked, explored)
        orders.append(outcome.order)
    order = _merge(orders)
    return Verdict(True, order, order, (), {}, len(partitions), explored)


def apply(state: Any, op: Operation) -> object:
    """What the model returns for ``op``, an exception it raises as ``Raised``."""
    try:
        return getattr(state, op.name)(*op.args)
    except Exception as error:  # a raised exception is a result to compare
        return Raised.of(error)


def state_key(state: Any) -> Hashable:
    """The model's state as a cache key: its ``__shmstress_state__()`` when it defines one;
    else the pickle of its ``__dict__`` (or of itself, for an object without one).

    Pickling is the one way to key any plain object (dicts, lists, sets, nested ones) without
    asking the user for anything. It is sound for memoisation: equal pickles unpickle to equal
    states, so two different states never share a key. It may give equal states different
    keys (a dict filled in another order, a set iterated in another order, -0.0), which only
    costs the search a cache hit; a model that cares defines ``__shmstress_state__``.
    """
    custom = getattr(state, "__shmstress_state__", None)
    if custom is not None:
        return custom()  # type: ignore[no-any-return]
    return pickle.dumps(getattr(state, "__dict__", state), pickle.HIGHEST_PROTOCOL)


def _partitions(history: Sequence[Operation],
                key: Callable[[Operation], Hashable] | None) -> list[list[Operation]]:
    if key is None:
        return [list(history)] if history else []
    groups: dict[Hashable, list[Operation]] = {}
    for op in sorted(history, key=lambda op: op.invoked):
        groups.setdefault(key(op), []).append(op)
    return list(groups.values())


@dataclass
class _Outcome:
    order: tuple[Operation, ...] | None
    longest: tuple[Operation, ...]
    stuck: tuple[Operation, ...]
    expected: dict[Operation, object]
    states: int


class _Entry:
    """An invocation or response in the doubly linked list of events the search lifts
    operations out of (and puts them back on backtracking) in O(1)."""

    __slots__ = ("call", "index", "match", "next", "prev")

    def __init__(self, index: int, *, call: bool) -> None:
        self.index = index  # of the operation; -1 for the head
        self.call = call  # an invocation (else a response, or the head)
        self.match: _Entry | None = None  # an invocation's response (None: pending)
        self.prev: _Entry | None = None
        self.next: _Entry | None = None


def _events(ops: Sequence[Operation]) -> list[tuple[int, int, int]]:
    """(time, 0 for an invocation / 1 for a response, operation) in time order. At one time,
    invocations come first: operations stamped alike are taken as concurrent."""
    events = [(op.invoked, 0, i) for i, op in enumerate(ops)]
    events += [(op.responded, 1, i) for i, op in enumerate(ops) if op.responded is not None]
    events.sort()
    return events


def _linked(ops: Sequence[Operation]) -> _Entry:
    """The head of the list of ``ops``'s events in time order."""
    head = _Entry(-1, call=False)
    calls: list[_Entry] = [_Entry(i, call=True) for i in range(len(ops))]
    last = head
    for _, is_response, index in _events(ops):
        if is_response:
            entry = _Entry(index, call=False)
            calls[index].match = entry
        else:
            entry = calls[index]
        last.next, entry.prev = entry, last
        last = entry
    return head


def _lift(entry: _Entry) -> None:
    assert entry.prev is not None
    entry.prev.next = entry.next
    if entry.next is not None:
        entry.next.prev = entry.prev
    match = entry.match
    if match is not None:
        assert match.prev is not None
        match.prev.next = match.next
        if match.next is not None:
            match.next.prev = match.prev


def _unlift(entry: _Entry) -> None:
    match = entry.match
    if match is not None:
        assert match.prev is not None
        match.prev.next = match
        if match.next is not None:
            match.next.prev = match
    assert entry.prev is not None
    entry.prev.next = entry
    if entry.next is not None:
        entry.next.prev = entry


def _search(ops: Sequence[Operation], model: Callable[[], Any],
            budget: int | None) -> _Outcome:
    """WGL over one partition: ``order`` is None when no order explains it."""
    head = _linked(ops)
    state = model()
    linearized = 0  # bit i: operation i is in the order
    remaining = sum(1 for op in ops if op.responded is not None)
    seen: set[tuple[int, Hashable]] = {(0, state_key(state))}
    stack: list[tuple[_Entry, Any]] = []  # each lifted invocation, with the state before it
    longest: list[int] = []  # the operations of the longest order met
    kept = 0  # how much of the stack is still the start of ``longest``
    entry = head.next
    while remaining:
        if entry is not None and entry.call:
            op = ops[entry.index]
            after = copy.deepcopy(state)
            result = apply(after, op)
            if op.responded is None or result == op.result:
                bits = linearized | 1 << entry.index
                point = (bits, state_key(after))
                if point not in seen:
                    seen.add(point)
                    if budget is not None and len(seen) > budget:
                        raise LinearizabilityBudgetError(
                            f"the linearizability search explored more than {budget} states "
                            "without a verdict: raise max_states or declare a key")
                    stack.append((entry, state))
                    state, linearized = after, bits
                    _lift(entry)
                    if op.responded is not None:
                        remaining -= 1
                    if len(stack) > len(longest):  # copy only what changed since the last
                        longest[kept:] = [lifted.index for lifted, _ in stack[kept:]]
                        kept = len(stack)
                    entry = head.next
                    continue
            entry = entry.next
            continue
        # a response whose operation is not in the order yet (or the list's end): back up
        if not stack:
            stuck, expected = _stuck(ops, model, longest)
            return _Outcome(None, tuple(ops[i] for i in longest), stuck, expected, len(seen))
        lifted, state = stack.pop()
        kept = min(kept, len(stack))
        op = ops[lifted.index]
        linearized &= ~(1 << lifted.index)
        if op.responded is not None:
            remaining += 1
        _unlift(lifted)
        entry = lifted.next
    order = tuple(ops[lifted.index] for lifted, _ in stack)
    return _Outcome(order, order, (), {}, len(seen))


def _stuck(ops: Sequence[Operation], model: Callable[[], Any],
           prefix: Sequence[int]) -> tuple[tuple[Operation, ...], dict[Operation, object]]:
    """The operations that could come next after the longest prefix in real time (invoked
    before any remaining response), each with what the model returns for it there."""
    state = model()
    for index in prefix:
        apply(state, ops[index])
    done = set(prefix)
    candidates: list[Operation] = []
    for _, is_response, index in _events(ops):
        if index in done:
            continue
        if is_response:
            break
        candidates.append(ops[index])
    expected = {op: apply(copy.deepcopy(state), op) for op in candidates}
    return tuple(candidates), expected


def _merge(orders: Sequence[tuple[Operation, ...]]) -> tuple[Operation, ...]:
    """One order of the whole history from each partition's: every operation placed at the
    earliest point its partition's order allows (the latest invocation up to it), which lies
    within the operation's interval, so sorting by those points respects real time and every
    partition's order at once (the constructive half of locality)."""
    if len(orders) == 1:
        return orders[0]
    placed: list[tuple[int, int, int, Operation]] = []
    for partition, order in enumerate(orders):
        point = None
        for position, op in enumerate(order):
            point = op.invoked if point is None else max(point, op.invoked)
            placed.append((point, partition, position, op))
    placed.sort(key=lambda item: item[:3])
    return tuple(op for *_, op in placed)
