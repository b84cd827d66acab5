"""A swimlane as a terminal table and as an SVG picture: rendering only, no facts added.

The text form is Lincheck's interleaving table: a header of workers, each step in
its worker's column, so the eye follows one worker down and the interleaving
across. The SVG is the same table drawn for the report page and ``show --svg``:
plain inline styles and ``<title>`` tooltips (the full step where a label is cut),
no script, no external font or stylesheet, so it renders the same in a browser, an
image viewer and inline in a mailed report.
"""

from __future__ import annotations

import textwrap
from xml.sax.saxutils import escape, quoteattr

from shmstress.analysis.swimlane import LaneGap, LaneStep, Swimlane

RACING_MARK = "*"
VIOLATION_MARK = "!"
ELLIPSIS = "\u2026"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + ELLIPSIS


def gap_text(gap: LaneGap, lane: Swimlane) -> str:
    """``32 steps folded (clerk #2 30, auditor #1 2)``."""
    who = ", ".join(f"{lane.lane_name(worker)} {n}" for worker, n in gap.per_worker)
    noun = "step" if gap.count == 1 else "steps"
    return f"{gap.count:,} {noun} folded ({who})"


def column_widths(lane: Swimlane, budget: int) -> list[int]:
    """Each lane as wide as its longest step needs, the widest narrowed first until the
    columns fit ``budget`` (never below its name or MIN_COLUMN): a lane with few or short
    steps gives its room to the busy ones."""
    widths = [
        max(len(x.name), *(len(s.text) + 2 for s in lane.steps if s.worker == x.worker))
        if any(s.worker == x.worker for s in lane.steps) else len(x.name)
        for x in lane.lanes
    ]
    floors = [max(len(x.name), min(MIN_COLUMN, w)) for x, w in zip(lane.lanes, widths,
                                                                     strict=True)]
    while sum(widths) > budget:
        widest = max(range(len(widths)), key=lambda i: widths[i] - floors[i])
        if widths[widest] <= floors[widest]:
            break
        widths[widest] -= 1
    return widths


MIN_COLUMN = 14


def render_text(lane: Swimlane, width: int = 120) -> str:
    """The table, at most ``width`` characters wide where the lanes' names allow."""
    seq_width = max(4, len(f"{max((s.number for s in lane.steps), default=0):,}") + 1)
    sep = " | "
    widths = column_widths(lane, width - seq_width - len(sep) * len(lane.lanes))

    def row(seq: str, cells: list[str]) -> str:
        while cells and not cells[-1]:  # no separators trailing after the step
            cells = cells[:-1]
        padded = (cell.ljust(w) for cell, w in zip(cells, widths, strict=False))
        return (seq.rjust(seq_width) + sep + sep.join(padded)).rstrip()

    lines = [lane.title, row("step", [_cut(x.name, w) for x, w in zip(lane.lanes, widths,
                                                                       strict=True)])]
    lines.append("-" * seq_width + "-+-" + "-+-".join("-" * w for w in widths))
    for item in lane.rows:
        if isinstance(item, LaneGap):
            lines.append(":".rjust(seq_width) + sep + f"... {gap_text(item, lane)}")
            continue
        mark = VIOLATION_MARK if item.violation else RACING_MARK if item.racing else " "
        cells = [
            _cut(f"{mark} {item.text}", w) if x.worker == item.worker else ""
            for x, w in zip(lane.lanes, widths, strict=True)
        ]
        lines.append(row(f"{item.number:,}", cells))
    lines.append("")
    lines += [f"=> {line}" if index == 0 else f"   {line}"
              for index, line in enumerate(lane.violation.split("\n"))]
    lines.append(f"({RACING_MARK} a step the explanation tells, {VIOLATION_MARK} where the "
                 "violation was found)")
    lines += [f"(note: {note})" for note in lane.notes]
    return "\n".join(lines) + "\n"


# -- SVG --------------------------------------------------------------------------------------
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
FONT_SIZE = 12
CHAR_W = 6.9  # a generous average advance of FONT at FONT_SIZE: labels are cut to fit
BOLD_W = 7.7  # ... and of its bold face, which racing steps use
TITLE_W = 8.6  # ... and of the title's, bold at 14
LEGEND_W = 360.0
ROW_H = 24
HEAD_H = 34
TITLE_H = 44
SEQ_W = 64
PAD = 12
LANE_MIN, LANE_MAX, LANE_EMPTY = 150.0, 320.0, 110.0
WIDTH_BUDGET = 1150.0
"""Lanes narrow (down to LANE_MIN) to keep the picture within a report page's column, where
it would otherwise need a scroll bar; the tooltips keep what a narrower lane cuts."""

RACING_FILL, RACING_STROKE, RACING_TEXT = "#fde3df", "#c0392b", "#7b1d12"
STEP_FILL, STEP_STROKE, STEP_TEXT = "#eef2f7", "#c3cedb", "#34404d"
LANE_FILLS = ("#ffffff", "#f7f8fa")
MUTED = "#6b7480"


def _text(x: float, y: float, text: str, **style: str) -> str:
    attrs = "".join(f" {k.replace('_', '-')}={quoteattr(v)}" for k, v in style.items())
    return f'<text x="{x:.1f}" y="{y:.1f}"{attrs}>{escape(text)}</text>'


def _fits(width: float, bold: bool = False) -> int:
    return max(4, int(width / (BOLD_W if bold else CHAR_W)))


def lane_widths(lane: Swimlane) -> list[float]:
    """Each lane as wide as its longest step needs (up to LANE_MAX), the widest narrowed
    first (down to LANE_MIN) while the picture is wider than WIDTH_BUDGET; a lane with no
    step shown keeps only its name's room, so the busy lanes cut fewer labels."""
    widths = []
    for column in lane.lanes:
        own = [len(s.text) * (BOLD_W if s.racing else CHAR_W) + 40
               for s in lane.steps if s.worker == column.worker]
        name = len(column.name) * BOLD_W + 24
        widths.append(min(LANE_MAX, max(name, *own)) if own else max(name, LANE_EMPTY))
    budget = WIDTH_BUDGET - 2 * PAD - SEQ_W
    floors = [min(w, LANE_MIN) for w in widths]
    while sum(widths) > budget:
        widest = max(range(len(widths)), key=lambda i: widths[i] - floors[i])
        if widths[widest] - floors[widest] < 1:
            break
        widths[widest] -= 1
    return widths


def render_svg(lane: Swimlane) -> str:
    """The swimlane as one standalone SVG document (no XML declaration, so it also inlines
    into an HTML page)."""
    lanes = lane.lanes
    widths = lane_widths(lane)
    x0 = PAD + SEQ_W
    starts = [x0 + sum(widths[:index]) for index in range(len(lanes))]
    lanes_end = x0 + sum(widths)
    width = max(lanes_end + PAD, PAD * 2 + len(lane.title) * TITLE_W, LEGEND_W)
    body_top = TITLE_H + HEAD_H
    body_h = ROW_H * len(lane.rows)
    wrap = _fits(width - 2 * PAD - 16)
    violation_lines = [  # (text, bold): the violation's own line, then who held what
        (piece, number == 0) for number, line in enumerate(lane.violation.split("\n"))
        for piece in (textwrap.wrap(line, wrap) or [""])
    ]
    note_lines = [piece for note in lane.notes for piece in textwrap.wrap(f"note: {note}", wrap)]
    box_h = 16 + 17 * len(violation_lines)
    height = body_top + body_h + 12 + box_h + 18 * (len(note_lines) + 1) + PAD
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family={quoteattr(FONT)} '
        f'font-size="{FONT_SIZE}" role="img">',
        f"<title>{escape(lane.title)}</title>",
        f'<rect x="0" y="0" width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
        _text(PAD, 20, lane.title, font_size="14", font_weight="bold", fill="#222222"),
    ]
    # legend
    lx = float(PAD)
    for fill, stroke, label in ((RACING_FILL, RACING_STROKE, "step the explanation tells"),
                                (STEP_FILL, STEP_STROKE, "other step")):
        out.append(f'<rect x="{lx}" y="29" width="12" height="10" rx="2" fill="{fill}" '
                   f'stroke="{stroke}"/>')
        out.append(_text(lx + 17, 38, label, fill=MUTED, font_size="11"))
        lx += 17 + len(label) * 6.3 + 18
    # lanes: background stripes, headers, separators
    out.append(_text(PAD + SEQ_W - 8, body_top - 12, "step", text_anchor="end", fill=MUTED))
    for index, column in enumerate(lanes):
        x, lane_w = starts[index], widths[index]
        out.append(f'<rect x="{x:.1f}" y="{TITLE_H}" width="{lane_w:.1f}" '
                   f'height="{HEAD_H + body_h}" fill="{LANE_FILLS[index % 2]}" '
                   'stroke="#dde2e8"/>')
        out.append(f'<g><title>{escape(column.detail)}</title>'
                   + _text(x + lane_w / 2, body_top - 12, _cut(column.name, _fits(lane_w)),
                           text_anchor="middle", font_weight="bold", fill="#222222")
                   + "</g>")
    out.append(f'<line x1="{PAD}" y1="{body_top}" x2="{lanes_end:.1f}" y2="{body_top}" '
               'stroke="#9aa5b1"/>')
    column_of = {column.worker: index for index, column in enumerate(lanes)}
    for row_index, item in enumerate(lane.rows):
        y = body_top + row_index * ROW_H
        mid = y + ROW_H / 2 + 4
        if isinstance(item, LaneGap):
            out.append(f'<rect x="{x0:.1f}" y="{y + 2}" width="{lanes_end - x0:.1f}" '
                       f'height="{ROW_H - 4}" fill="#eceff3" stroke="#d3d9e0" '
                       'stroke-dasharray="4 3"/>')
            first, last = item.numbers
            out.append(f'<g><title>steps {first:,} to {last:,}: none of '
                       f'them in the explanation</title>'
                       + _text(PAD + SEQ_W - 8, mid, "\u22ee", text_anchor="end", fill=MUTED)
                       + _text(x0 + 8, mid, gap_text(item, lane), fill=MUTED,
                               font_style="italic")
                       + "</g>")
            continue
        at = column_of.get(item.worker, 0)
        out.append(_step(item, starts[at], y, widths[at], mid,
                         lane.lane_name(item.worker)))
    # the violation
    y = body_top + body_h + 12
    out.append(f'<rect x="{PAD}" y="{y}" width="{width - 2 * PAD:.1f}" height="{box_h}" '
               f'rx="4" fill="#fff5f3" stroke="{RACING_STROKE}"/>')
    for index, (line, bold) in enumerate(violation_lines):
        out.append(_text(PAD + 8, y + 20 + 17 * index, line, fill=RACING_TEXT,
                         font_weight="bold" if bold else "normal"))
    y += box_h + 18
    for index, line in enumerate(note_lines):
        out.append(_text(PAD, y + 18 * index, line, fill=MUTED, font_size="11"))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _step(item: LaneStep, x: float, y: float, lane_w: float, mid: float, who: str) -> str:
    fill, stroke, color = ((RACING_FILL, RACING_STROKE, RACING_TEXT) if item.racing
                           else (STEP_FILL, STEP_STROKE, STEP_TEXT))
    if item.violation and not item.racing:
        stroke = RACING_STROKE
    weight = "bold" if item.racing else "normal"
    inner = lane_w - 16
    shown = _cut(item.text, _fits(inner - 12, bold=item.racing))
    tip = f"step {item.number:,}, {who}: {item.detail}"
    mark = " (the violation was found here)" if item.violation else ""
    if item.violation:
        shown = _cut(f"\u2717 {item.text}", _fits(inner - 12, bold=item.racing))
    return (f"<g><title>{escape(tip + mark)}</title>"
            + _text(PAD + SEQ_W - 8, mid, f"{item.number:,}", text_anchor="end",
                    fill=RACING_STROKE if item.violation else MUTED,
                    font_weight="bold" if item.violation else "normal")
            + f'<rect x="{x + 8:.1f}" y="{y + 3}" width="{inner:.1f}" height="{ROW_H - 6}" '
            f'rx="3" fill="{fill}" stroke="{stroke}"'
            + (' stroke-width="1.5"' if item.racing or item.violation else "") + "/>"
            + _text(x + 14, mid, shown, fill=color, font_weight=weight)
            + "</g>")
