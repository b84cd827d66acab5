"""The linearizability checker on its own: hand-written histories with known answers, and
generated ones checked against a brute force that tries every order."""

from __future__ import annotations

import copy
import itertools
import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from shmstress.analysis.linearizability import Operation, Raised, Verdict, apply, check, state_key
from shmstress.analysis.linearizability_table import PENDING, history_table
from shmstress.bench.linearizability import (
    NEVER_WRITTEN,
    KeyValueMap,
    by_key,
    key_value_calls,
    linearizable_history,
    unexplainable,
)
from shmstress.bench.suite import BenchOptions, bench_sections, run_bench
from shmstress.core.errors import LinearizabilityBudgetError
from shmstress.render.linearizability import render_history_table


class Register:
    def __init__(self) -> None:
        self.value = 0

    def write(self, value: int) -> None:
        self.value = value

    def read(self) -> int:
        return self.value


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def inc(self) -> int:
        self.value += 1
        return self.value

    def get(self) -> int:
        return self.value


class Queue:
    def __init__(self) -> None:
        self.items: list[int] = []

    def put(self, item: int) -> None:
        self.items.append(item)

    def get(self) -> int:
        return self.items.pop(0)  # IndexError on an empty queue


def op(process: int, name: str, args: tuple[object, ...], result: object, invoked: int,
       responded: int | None) -> Operation:
    return Operation(process, name, args, result, invoked, responded)


def explains(order: Sequence[Operation], history: Sequence[Operation],
             model: Callable[[], Any]) -> bool:
    """Whether ``order`` is a linearization of ``history``: every completed operation once,
    pending ones at most once, real time respected, the model agreeing with each result."""
    if len(set(order)) != len(order) or not set(order) <= set(history):
        return False
    if {o for o in history if not o.pending} - set(order):
        return False
    for earlier, later in itertools.combinations(order, 2):
        if later.responded is not None and later.responded < earlier.invoked:
            return False
    state = model()
    return all(apply(state, o) == o.result or o.pending for o in order)


def brute_force(history: Sequence[Operation], model: Callable[[], Any]) -> bool:
    """The reference, from the definition: extend an order by any operation that nothing left
    must precede in real time and that the model agrees with, every way, until the completed
    operations are all in (no memo, no event list: every order is tried)."""
    def extend(state: Any, left: frozenset[Operation]) -> bool:
        if all(o.pending for o in left):
            return True
        for candidate in left:
            if any(o.responded is not None and o.responded < candidate.invoked for o in left):
                continue
            after = copy.deepcopy(state)
            if (apply(after, candidate) == candidate.result or candidate.pending) and extend(
                    after, left - {candidate}):
                return True
        return False

    return extend(model(), frozenset(history))


# -- hand-written histories with known answers -------------------------------------------

def test_a_register_read_overlapping_a_write_may_see_either_value() -> None:
    history = [op(0, "write", (1,), None, 0, 10), op(1, "read", (), 0, 1, 2),
               op(1, "read", (), 1, 3, 4)]
    verdict = check(history, Register)
    assert verdict.linearizable
    assert verdict.order is not None and explains(verdict.order, history, Register)


def test_a_register_read_of_the_old_value_after_a_newer_was_read_is_not_linearizable() -> None:
    history = [op(0, "write", (1,), None, 0, 10), op(1, "read", (), 1, 1, 2),
               op(1, "read", (), 0, 3, 4)]
    verdict = check(history, Register)
    assert not verdict.linearizable and verdict.order is None
    assert verdict.longest_prefix == (history[0], history[1])
    assert verdict.stuck_at == (history[2],)
    assert verdict.expected == {history[2]: 1}


@pytest.mark.parametrize("seen", [1, 2])
def test_either_of_two_concurrent_writes_may_be_the_last(seen: int) -> None:
    """Both orders of the writes reach the same set of operations in different states: the
    search must tell them apart."""
    history = [op(0, "write", (1,), None, 0, 2), op(1, "write", (2,), None, 1, 3),
               op(0, "read", (), seen, 4, 5)]
    verdict = check(history, Register)
    assert verdict.linearizable
    assert verdict.order is not None and verdict.order[1].args == (seen,)


def test_a_read_before_the_write_was_invoked_cannot_see_it() -> None:
    history = [op(1, "read", (), 1, 0, 1), op(0, "write", (1,), None, 2, 3)]
    assert not check(history, Register).linearizable


def test_a_counter_whose_concurrent_increments_both_return_one_lost_one() -> None:
    lost = [op(0, "inc", (), 1, 0, 3), op(1, "inc", (), 1, 1, 2)]
    verdict = check(lost, Counter)
    assert not verdict.linearizable
    assert len(verdict.longest_prefix) == 1
    assert set(verdict.expected.values()) == {2}
    kept = [op(0, "inc", (), 2, 0, 3), op(1, "inc", (), 1, 1, 2), op(1, "get", (), 2, 4, 5)]
    assert check(kept, Counter).linearizable


def test_a_counter_read_after_two_increments_finished_must_see_both() -> None:
    history = [op(0, "inc", (), 1, 0, 1), op(1, "inc", (), 2, 0, 2), op(0, "get", (), 1, 3, 4)]
    verdict = check(history, Counter)
    assert not verdict.linearizable
    assert verdict.expected == {history[2]: 2}


def test_a_queue_that_hands_one_item_to_two_getters_is_not_linearizable() -> None:
    history = [op(0, "put", (7,), None, 0, 1), op(1, "get", (), 7, 2, 5),
               op(2, "get", (), 7, 3, 4)]
    verdict = check(history, Queue)
    assert not verdict.linearizable
    assert verdict.expected[verdict.stuck_at[0]] == Raised("IndexError")


def test_a_queue_that_loses_an_item_is_not_linearizable() -> None:
    empty = Raised("IndexError", "pop from empty list")
    history = [op(0, "put", (1,), None, 0, 1), op(0, "put", (2,), None, 2, 3),
               op(1, "get", (), 1, 4, 5), op(1, "get", (), empty, 6, 7)]
    assert not check(history, Queue).linearizable
    delivered = [*history[:3], replace(history[3], result=2)]
    assert check(delivered, Queue).linearizable


def test_a_recorded_exception_matches_the_models_by_type_whatever_its_message() -> None:
    history = [op(0, "get", (), Raised("IndexError", "a message of its own"), 0, 1)]
    assert check(history, Queue).linearizable
    assert not check([replace(history[0], result=Raised("KeyError"))], Queue).linearizable


def test_a_pending_write_whose_value_was_read_is_assumed_to_have_happened() -> None:
    write = op(0, "write", (1,), None, 0, None)
    read = op(1, "read", (), 1, 4, 5)
    verdict = check([write, read], Register)
    assert verdict.linearizable and verdict.order == (write, read)


def test_a_pending_write_nobody_saw_is_dropped() -> None:
    write = op(0, "write", (1,), None, 0, None)
    reads = [op(1, "read", (), 0, 4, 5), op(1, "read", (), 0, 6, 7)]
    verdict = check([write, *reads], Register)
    assert verdict.linearizable and verdict.order == tuple(reads)


def test_a_pending_write_cannot_take_effect_before_it_was_invoked() -> None:
    history = [op(1, "read", (), 1, 0, 1), op(0, "write", (1,), None, 2, None)]
    assert not check(history, Register).linearizable


def test_a_pending_operations_result_is_not_compared() -> None:
    history = [op(0, "inc", (), "never returned", 0, None), op(1, "get", (), 1, 2, 3)]
    assert check(history, Counter).linearizable


def test_partitions_are_checked_alone_and_the_failing_one_gives_the_evidence() -> None:
    history = [op(0, "put", ("a", 1), None, 0, 1), op(1, "put", ("b", 2), None, 0, 1),
               op(0, "get", ("a",), 1, 2, 3), op(1, "get", ("b",), NEVER_WRITTEN, 2, 3)]
    verdict = check(history, KeyValueMap, key=by_key)
    assert not verdict.linearizable and verdict.partitions_checked == 2
    assert verdict.longest_prefix == (history[1],)
    assert verdict.expected == {history[3]: 2}
    fine = check(history[:3], KeyValueMap, key=by_key)
    assert fine.linearizable and fine.partitions_checked == 2
    assert fine.order is not None and explains(fine.order, history[:3], KeyValueMap)


def test_an_empty_history_is_linearizable() -> None:
    assert check([], Register) == Verdict(True, (), (), (), {}, 0, 0)


def test_max_states_bounds_the_search_with_an_error_not_a_verdict() -> None:
    rng = random.Random(1)
    history = linearizable_history(KeyValueMap, key_value_calls(60, 3, rng), 4, rng)
    assert check(history, KeyValueMap, max_states=10_000).linearizable
    with pytest.raises(LinearizabilityBudgetError):
        check(history, KeyValueMap, max_states=5)


def test_an_unhashable_result_is_compared_by_equality() -> None:
    class Snapshot(Register):
        def all(self) -> list[int]:
            return [self.value]

    history = [op(0, "write", (3,), None, 0, 1), op(0, "all", (), [3], 2, 3)]
    assert check(history, Snapshot).linearizable
    verdict = check([history[0], replace(history[1], result=[4])], Snapshot)
    assert verdict.expected == {replace(history[1], result=[4]): [3]}


def test_the_state_key_is_the_models_own_when_it_defines_one() -> None:
    class Keyed(Register):
        def __shmstress_state__(self) -> Hashable:
            return ("value", self.value)

    assert state_key(Keyed()) == ("value", 0)
    first, second = Register(), Register()
    assert state_key(first) == state_key(second)
    second.write(5)
    assert state_key(first) != state_key(second)


def test_the_table_has_a_column_per_process_and_marks_what_the_model_could_not_explain(
) -> None:
    history = [op(0, "write", (1,), None, 0, 10), op(1, "read", (), 1, 1, 2),
               op(1, "read", (), 0, 3, 4), op(2, "write", (2,), None, 5, None)]
    table = history_table(history, check(history, Register))
    assert table.processes == (0, 1, 2)
    assert [[cell.operation for cell in column] for column in table.columns] == [
        [history[0]], [history[1], history[2]], [history[3]]]
    assert [cell.operation for cell in table.stuck] == [history[2]]
    assert table.columns[1][1].expected == "1"
    assert table.columns[2][0].result == PENDING
    text = render_history_table(table)
    lines = text.splitlines()
    assert lines[0] == "= Invalid execution results ="
    assert "Process 1" in lines[2] and "Process 2" in lines[2] and "Process 3" in lines[2]
    assert "read(): 0 <- model: 1" in text
    assert "process 2: read(): 0, the model returns 1" in text
    assert len({len(line) for line in lines[1:7]}) == 1  # the table's rows line up


def test_a_linearizable_history_renders_its_witness_order() -> None:
    history = [op(0, "write", (1,), None, 0, 3), op(1, "read", (), 1, 1, 2)]
    text = render_history_table(history_table(history, check(history, Register)))
    assert text.startswith("= Valid execution results =")
    assert "linearizable, as: 1. write(1), 2. read()" in text


# -- generated histories ------------------------------------------------------------------

QUEUE_CALLS = st.lists(st.one_of(st.tuples(st.just("put"), st.tuples(st.integers(0, 3))),
                                 st.tuples(st.just("get"), st.just(()))), max_size=7)
MAP_CALLS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.tuples(st.sampled_from("ab"), st.integers(0, 2))),
    st.tuples(st.just("get"), st.tuples(st.sampled_from("ab")))), max_size=7)
MODEL_AND_CALLS = st.one_of(st.tuples(st.just(Queue), QUEUE_CALLS),
                            st.tuples(st.just(KeyValueMap), MAP_CALLS))
SMALL = 7  # operations, pending ones included: the brute force tries up to 7! orders
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(model_and_calls=MODEL_AND_CALLS, processes=st.integers(1, 4), spread=st.integers(0, 4),
       pending=st.sampled_from([0.0, 0.5]), rng=st.randoms(use_true_random=False))
def test_a_history_run_sequentially_with_intervals_around_each_step_is_linearizable(
        model_and_calls: tuple[Callable[[], Any], list[tuple[str, tuple[object, ...]]]],
        processes: int, spread: int, pending: float, rng: random.Random) -> None:
    model, calls = model_and_calls
    history = linearizable_history(model, calls, processes, rng, spread=spread,
                                   pending=pending)
    verdict = check(history, model)
    assert verdict.linearizable
    assert verdict.order is not None and explains(verdict.order, history, model)


def _mutated(history: list[Operation], index: int, result: object) -> list[Operation]:
    mutated = list(history)
    mutated[index] = replace(mutated[index], result=result)
    return mutated


@FAST
@given(calls=MAP_CALLS, processes=st.integers(1, 4), spread=st.integers(0, 4),
       pending=st.sampled_from([0.0, 0.5]), rng=st.randoms(use_true_random=False),
       data=st.data())
def test_the_verdict_on_a_small_history_with_one_result_changed_is_the_brute_forces(
        calls: list[tuple[str, tuple[object, ...]]], processes: int, spread: int,
        pending: float, rng: random.Random, data: st.DataObject) -> None:
    history = linearizable_history(KeyValueMap, calls, processes, rng, spread=spread,
                                   pending=pending)
    assume(0 < len(history) <= SMALL)
    index = data.draw(st.integers(0, len(history) - 1))
    changed = _mutated(history, index, data.draw(st.sampled_from([None, 0, 1, 2])))
    truth = brute_force(changed, KeyValueMap)
    whole = check(changed, KeyValueMap)
    keyed = check(changed, KeyValueMap, key=by_key)
    assert whole.linearizable == keyed.linearizable == truth
    for verdict in (whole, keyed):
        if truth:
            assert verdict.order is not None and explains(verdict.order, changed, KeyValueMap)
        else:
            assert verdict.stuck_at
            assert set(verdict.stuck_at).isdisjoint(verdict.longest_prefix)


@FAST
@given(model_and_calls=MODEL_AND_CALLS, processes=st.integers(1, 4), spread=st.integers(0, 4),
       rng=st.randoms(use_true_random=False), data=st.data())
def test_a_result_no_order_can_explain_makes_a_history_not_linearizable(
        model_and_calls: tuple[Callable[[], Any], list[tuple[str, tuple[object, ...]]]],
        processes: int, spread: int, rng: random.Random, data: st.DataObject) -> None:
    model, calls = model_and_calls
    history = linearizable_history(model, calls, processes, rng, spread=spread)
    gets = [i for i, o in enumerate(history) if o.name == "get"]
    assume(gets and len(history) <= SMALL)
    changed = _mutated(history, data.draw(st.sampled_from(gets)), NEVER_WRITTEN)
    assert not brute_force(changed, model)
    verdict = check(changed, model)
    assert not verdict.linearizable
    assert any(o.result == NEVER_WRITTEN and verdict.expected[o] != NEVER_WRITTEN
               for o in verdict.stuck_at)
    assert explains(verdict.longest_prefix, verdict.longest_prefix, model)


def test_a_thousand_operations_over_twenty_keys_one_result_spoilt() -> None:
    """The benchmark's histories, checked for their answers (not timed: the bench times)."""
    rng = random.Random(7)
    history = linearizable_history(KeyValueMap, key_value_calls(1000, 20, rng), 5, rng,
                                   spread=4, pending=0.5)
    verdict = check(history, KeyValueMap, key=by_key)
    assert verdict.linearizable and verdict.partitions_checked == 20
    assert verdict.order is not None and len(verdict.order) >= 1000 - 5
    spoilt = check(unexplainable(history, rng), KeyValueMap, key=by_key)
    assert not spoilt.linearizable
    assert [o.result for o in spoilt.stuck_at].count(NEVER_WRITTEN) == 1


def test_the_bench_section_times_each_history_and_prints_its_verdict() -> None:
    report = run_bench(BenchOptions(sections=("linearizability",)), log=lambda _: None)
    assert report.completed == ["linearizability"] and report.linearizability is not None
    timings = report.linearizability.timings
    assert [t.linearizable for t in timings] == [True, False, True, False]
    assert all(t.operations >= 1000 and t.keys == 20 for t in timings)
    [(title, lines)] = bench_sections(report)
    assert title == "Linearizability checker"
    assert "1000 ops, 20 keys" in lines[1] and "(linearizable, " in lines[1]
    assert "(not linearizable, " in lines[2] and "(not linearizable, " in lines[4]
