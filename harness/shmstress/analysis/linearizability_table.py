"""A checked history as Lincheck lays it out: one column per process, its operations in
invocation order, with what each returned, where the search placed it, and, for those no
order could explain, what the model returned instead. Plain data: the renderers lay it out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shmstress.analysis.linearizability import Operation, Verdict

PENDING = "<no response>"


@dataclass(frozen=True)
class Cell:
    """One operation in its process's column."""

    operation: Operation
    call: str  # put(1, 'a')
    result: str  # repr of what it returned; PENDING when it never responded
    position: int | None  # 1-based place in the witness order, or in the longest prefix
    expected: str | None  # the model's result where the operation was stuck and it differs


@dataclass(frozen=True)
class HistoryTable:
    linearizable: bool
    processes: tuple[int, ...]  # 0-based, in column order
    columns: tuple[tuple[Cell, ...], ...]  # one per process, in invocation order
    order: tuple[Operation, ...]  # the witness order, or the longest linearizable prefix
    stuck: tuple[Cell, ...]  # the operations none of which could come next after ``order``


def history_table(history: Sequence[Operation], verdict: Verdict) -> HistoryTable:
    """``history`` in columns, annotated with ``verdict``'s evidence."""
    order = verdict.order if verdict.order is not None else verdict.longest_prefix
    positions = {op: place for place, op in enumerate(order, start=1)}
    cells: dict[Operation, Cell] = {}
    for op in history:
        expected = verdict.expected.get(op, op.result) if op in verdict.expected else None
        differs = op in verdict.expected and expected != op.result
        cells[op] = Cell(op, op.call(), PENDING if op.pending else repr(op.result),
                         positions.get(op), repr(expected) if differs else None)
    processes = tuple(sorted({op.process for op in history}))
    columns = tuple(
        tuple(cells[op] for op in sorted((op for op in history if op.process == process),
                                         key=lambda op: op.invoked))
        for process in processes)
    return HistoryTable(verdict.linearizable, processes, columns, order,
                        tuple(cells[op] for op in verdict.stuck_at if op in cells))
