"""A checked history as text, in the shape of Lincheck's "= Invalid execution results ="
table: a column per process (numbered from 1, as the table says), and under it the order the
search got to and the operations none of which could come next."""

from __future__ import annotations

from shmstress.analysis.linearizability_table import Cell, HistoryTable


def render_history_table(table: HistoryTable) -> str:
    title = ("= Valid execution results =" if table.linearizable
             else "= Invalid execution results =")
    header = [f"Process {process + 1}" for process in table.processes]
    rows = [[_cell_text(column[row]) if row < len(column) else "" for column in table.columns]
            for row in range(max((len(column) for column in table.columns), default=0))]
    widths = [max([len(header[i]), *(len(row[i]) for row in rows)])
              for i in range(len(header))]
    rule = "| " + "-" * (sum(widths) + 3 * (len(widths) - 1)) + " |"

    def line(texts: list[str]) -> str:
        return "| " + " | ".join(text.ljust(width) for text, width in zip(texts, widths,
                                                                           strict=True)) + " |"

    lines = [title, rule, line(header), rule, *(line(row) for row in rows), rule]
    if table.linearizable:
        lines.append("linearizable, as: " + _order(table))
        return "\n".join(lines)
    lines.append("the longest order the model explains: " + (_order(table) or "(none)"))
    lines.append("none of these can come next:")
    for cell in table.stuck:
        explanation = (f"the model returns {cell.expected}" if cell.expected is not None
                       else "the model agrees, but no order goes on from there")
        lines.append(f"  process {cell.operation.process + 1}: {cell.call}: {cell.result}, "
                     f"{explanation}")
    return "\n".join(lines)


def _cell_text(cell: Cell) -> str:
    text = f"{cell.call}: {cell.result}"
    if cell.position is not None:
        text += f" [{cell.position}]"
    if cell.expected is not None:
        text += f" <- model: {cell.expected}"
    return text


def _order(table: HistoryTable) -> str:
    return ", ".join(f"{place}. {op.call()}" for place, op in enumerate(table.order, start=1))
