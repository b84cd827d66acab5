"""A controlled search's coordinator keeps a bounded amount of memory however long it runs.

A 300 s controlled soak of the DRA tracker grew its coordinator from 51 to 103 MB: the
portfolio's DPOR member kept every execution its untried choices were found in, and
each execution found more than it used (``strategies/dpor.py``, "Frontier"). The
member now keeps a budget of steps. Growth is measured with tracemalloc between two
points after the warm-up (the budget filled): a per-execution leak of a few kilobytes
would exceed the bound, RSS would hide it in the allocator's noise.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest

from shmstress.controlled import session as controlled_session
from shmstress.controlled.options import ControlledOptions
from shmstress.controlled.runner import run_controlled
from shmstress.controlled.strategies import (
    Dpor,
    Portfolio,
    PortfolioSpec,
    exploring_strategy,
)
from shmstress.controlled.strategies import dpor as dpor_module
from shmstress.core.access import Access, Footprint
from shmstress.core.config import RunConfig

WORKERS = 3
STEPS = 20  # each worker's steps; every step reads or writes one of two shared variables


@dataclass
class _View:
    step: int
    current: int
    runnable: Sequence[int]
    current_can_continue: bool
    workers: int = WORKERS

    def label(self, worker: int) -> str:
        return "spin"

    def who(self, worker: int) -> str:
        return f"w{worker}"

    def describe(self, worker: int) -> str:
        return f"w{worker}"


def _execute(dpor: Dpor) -> list[int]:
    """One simulated execution of workers that race at nearly every step (a spinning
    tracker's shape: each execution shows DPOR more orders than it can try); the
    workers in the order they went."""
    left = [STEPS] * WORKERS
    current = -1
    footprints = []
    for step in range(WORKERS * STEPS):
        runnable = [w for w in range(WORKERS) if left[w]]
        worker, _ = dpor.next_task(_View(step, current, runnable, current in runnable))
        left[worker] -= 1
        current = worker
        footprints.append(Footprint(worker, (Access("var", step % 2,
                                                    write=left[worker] % 2 == 0),)))
    dpor.observe(footprints)
    return [footprint.worker for footprint in footprints]


def _traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def test_the_portfolios_dpor_member_keeps_a_bounded_frontier(
    monkeypatch: pytest.MonkeyPatch, traced: None,
) -> None:
    """The member the portfolio runs, driven alone: once its budget is full its memory
    stays flat. (The budget is made small so that it fills within the test's warm-up;
    unbounded, the member grows by about 10 KB an execution here.)"""
    monkeypatch.setattr(dpor_module, "MEMBER_KEPT_STEPS", 1500)  # where DporSpec.build reads it
    portfolio = exploring_strategy(PortfolioSpec(), 1, WORKERS, 10_000, "declared")
    assert isinstance(portfolio, Portfolio)
    (dpor,) = (member for member in portfolio.members if isinstance(member, Dpor))
    warm_up, measured = 60, 60
    for _ in range(warm_up):
        assert dpor.new_execution()
        _execute(dpor)
    before = _traced()
    for _ in range(measured):
        assert dpor.new_execution(), "the search ran out"
        _execute(dpor)
    grown = _traced() - before
    assert grown < 150_000, f"{grown:,} bytes more after {measured} executions"


@pytest.mark.nightly
def test_a_long_controlled_run_keeps_its_memory_flat(
    monkeypatch: pytest.MonkeyPatch, traced: None,
) -> None:
    """The real thing: the default portfolio on the DRA tracker, 1,600 executions; from
    execution 600 on (the DPOR member's budget is full by about 300) the traced memory
    grows by less than a megabyte (it grew by about 10 KB an execution)."""
    marks = {600: 0, 1600: 0}
    execute = controlled_session.Session.execute
    count = 0

    def measured_execute(self: controlled_session.Session, *args: object,
                         **kwargs: object) -> object:
        nonlocal count
        count += 1
        if count in marks:
            marks[count] = _traced()
        return execute(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(controlled_session.Session, "execute", measured_execute)
    result = run_controlled(RunConfig(tracker="dra", variant="fixed", seed=1),
                            ControlledOptions(executions=max(marks)))
    assert result.executions == max(marks)
    grown = marks[1600] - marks[600]
    assert grown < 1_000_000, f"{grown:,} bytes more over 1,000 executions"


def test_a_budget_the_search_never_reaches_changes_no_schedule() -> None:
    """Below its budget the member runs exactly the schedules of the unbounded search."""
    def schedules(dpor: Dpor) -> list[list[int]]:
        seen = []
        while len(seen) < 40 and dpor.new_execution():
            seen.append(_execute(dpor))
        return seen

    assert schedules(Dpor(1, kept_steps=10**9)) == schedules(Dpor(1))
