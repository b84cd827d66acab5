"""A plain-code execution as a klog log: one line per step, as the tracker runs log theirs.

Each step is an event at its call site, stamped with the time the process took it and the
process's pid, logged by the process it ran in (``increment #1``), with what it read or
wrote as a field; the failure closes the log as an error line.
"""

from __future__ import annotations

from shmstress.core.trace import step_number
from shmstress.plain.outcome import PlainEnd, PlainOutcome
from shmstress.render.klog import KlogEvent, format_event
from shmstress.render.plain_report import step_text


def log_lines(outcome: PlainOutcome) -> list[str]:
    mono0, wall0 = outcome.clock
    lines = []
    last_t = mono0
    for index, step in enumerate(outcome.steps):
        if step.label.startswith("begin "):
            continue
        fields: list[tuple[str, object]] = [("step", step_number(index))]
        started = step.label.startswith("start ")  # its value is the slot it started
        if step.index >= 0:
            fields.append(("index", step.index))
        if step.has_value and not started:
            fields.append(("value", step.value))
        last_t = step.t_ns or last_t
        lines.append(format_event(KlogEvent(
            step.file or "?", max(step.line, 0), "I", (wall0 + last_t - mono0) / 1e9,
            outcome.pids[step.worker] if step.worker < len(outcome.pids) else 0,
            outcome.who(step.worker), step_text(outcome, step) if started else step.what,
            tuple(fields))))
    failure = outcome.failure
    if failure is not None:
        worker = failure.worker
        kind = "raised" if failure.end is PlainEnd.FAILED else failure.end.value
        lines.append(format_event(KlogEvent(
            "shmstress", 0, "E", (wall0 + last_t - mono0) / 1e9,
            outcome.pids[worker] if 0 <= worker < len(outcome.pids) else 0,
            outcome.who(worker), f"{kind}: {failure.message}",
            (("after_step", failure.after_step),))))
    return lines
