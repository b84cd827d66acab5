"""Recorded points and log calls as klog text: the merged run log, the failure snippet.

Rendering happens after the run, from the records copied out of the rings:
every worker's records merged by (sequence number, sub-index), which is the
true global order of the points (a log call sits right after the point it
follows). Names, messages and verbosity come from the tracker's words.

A written log starts with one line naming the run ("Recorded run", with the
tracker and its parameters), so ``shmstress log`` can find the tracker's
words for a log file alone. The order of the lines is exact; their
timestamps are taken just after the sequence number, so two workers' stamps
can be out of order by the microseconds between the two.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from shmstress.analysis.explain import holding_steps
from shmstress.analysis.focus import Focus, focus, merged, tracker_words, words_of
from shmstress.core.errors import ConfigError
from shmstress.core.result import RunResult, Violation
from shmstress.core.trace import LEVELS, Record, Recording
from shmstress.core.workers import describe_worker
from shmstress.plugin.words import MAX_VERBOSITY, LogWords
from shmstress.render.klog import KlogEvent, ParsedLine, format_event

SNIPPET_VERBOSITY = 1
"""The snippet shows upstream-style messages and other changes of shared state."""

SNIPPET_LEAD = 3
"""Events of the involved objects shown from before the window: how the initial state arose."""

SNIPPET_MAX_LINES = 60

CUT = "..."

HARNESS_LOGGER = "shmstress"
RUN_HEADER = "Recorded run"

_LOGGING_LEVELS = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR}


@dataclass(frozen=True)
class Entry:
    """One record of the merged log, with what rendering and selecting it needs."""

    record: Record
    verbosity: int


def entries(recording: Recording, words: LogWords) -> list[Entry]:
    """Every point and log call, merged in global order."""
    levels: dict[int, int] = {}
    found: list[Entry] = []
    for record in merged(recording):
        level = levels.get(record.label)
        if level is None:
            level = levels[record.label] = words.verbosity(recording.labels[record.label].text)
        found.append(Entry(record, level))
    return found


def to_event(result: RunResult, words: LogWords, record: Record) -> KlogEvent:
    assert result.recording is not None
    recording = result.recording
    label = recording.labels[record.label]
    message, fields = words.event(label.text, record.fields)
    return KlogEvent(
        file=label.file or "?",
        line=label.line,
        level=LEVELS[record.level],
        time=recording.wall_time(record.t_ns),
        pid=_pid(result, record.worker),
        logger=words.logger,
        message=message,
        fields=fields,
    )


def log_events(result: RunResult, verbosity: int = MAX_VERBOSITY) -> Iterator[KlogEvent]:
    """The merged log: a header naming the run, ring overflow, the records up to ``verbosity``."""
    recording = result.recording
    if recording is None:
        return
    words = words_of(result)
    yield _header(result, recording)
    yield from _overflow_warnings(result)
    for entry in entries(recording, words):
        if entry.verbosity <= verbosity:
            yield to_event(result, words, entry.record)


def log_lines(result: RunResult, verbosity: int = MAX_VERBOSITY) -> Iterator[str]:
    """The merged log as klog text (an event may span lines)."""
    return (format_event(event) for event in log_events(result, verbosity))


def write_log(result: RunResult, path: Path, verbosity: int = MAX_VERBOSITY) -> Path:
    """Write the merged log of every worker to ``path`` (``<out>/run.log``)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as out:
            for text in log_lines(result, verbosity):
                out.write(text + "\n")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc}") from exc
    return path


def to_log_records(result: RunResult, verbosity: int = MAX_VERBOSITY) -> list[logging.LogRecord]:
    """The merged log as ``logging`` records, for users who log through ``logging``.

    Formatted with ``harness.klog.KlogFormatter`` they give the lines of
    ``run.log``; any other handler sees ordinary records with the fields in
    ``record.kv``.
    """
    out = []
    for event in log_events(result, verbosity):
        record = logging.LogRecord(
            event.logger, _LOGGING_LEVELS[event.level], event.file, event.line, event.message,
            None, None,
        )
        assert isinstance(event.time, float)
        record.created = event.time
        record.msecs = (event.time % 1) * 1000
        record.process = event.pid
        record.__dict__["kv"] = dict(event.fields)  # where KlogFormatter looks for fields
        out.append(record)
    return out


def words_of_log(events: Iterable[ParsedLine]) -> LogWords:
    """The words of the tracker a written log names in its header; the defaults if none."""
    for event in events:
        if (event.logger, event.message) == (HARNESS_LOGGER, RUN_HEADER):
            name, params = event.fields.get("tracker"), event.fields.get("params")
            if isinstance(name, str) and isinstance(params, dict):
                return tracker_words(name, params)
            break
    return LogWords()


def render_snippet(result: RunResult, violation: Violation | None = None) -> str:
    """The log lines that matter for a violation, ``...`` where lines were cut; "" if none."""
    found = focus(result, violation)
    if found is None or result.recording is None:
        return ""
    recording = result.recording
    holding = holding_steps(found, recording)  # chattier, but the explanation rests on them
    visible = [
        e for e in entries(recording, found.words)
        if e.record.seq <= found.end and (
            e.verbosity <= SNIPPET_VERBOSITY or (e.record.worker, e.record.seq) in holding
        )
    ]
    kept = _select(found, recording, visible)
    if len(kept) > SNIPPET_MAX_LINES:
        half = SNIPPET_MAX_LINES // 2
        kept = kept[:half] + kept[-half:]
    lines: list[str] = []
    previous = -1
    for index in kept:
        if previous >= 0 and index != previous + 1:
            lines.append(CUT)
        lines.append(format_event(to_event(result, found.words, visible[index].record)))
        previous = index
    return "\n".join(lines)


def _select(found: Focus, recording: Recording, visible: list[Entry]) -> list[int]:
    """Indices into ``visible``: the worker's window, the objects' events, and a short lead."""
    kept: list[int] = []
    lead: list[int] = []
    for index, entry in enumerate(visible):
        record = entry.record
        involved, elsewhere = found.relevance(recording, record)
        if record.seq < found.start:
            if involved:
                lead = [*lead, index][-SNIPPET_LEAD:]
        elif involved or found.own_context(record, elsewhere):
            kept.append(index)
    return lead + kept


def _header(result: RunResult, recording: Recording) -> KlogEvent:
    config = result.config
    return KlogEvent(
        file="logview.py", line=0, level="I", time=recording.wall0_ns / 1e9, pid=0,
        logger=HARNESS_LOGGER, message=RUN_HEADER,
        fields=(("tracker", config.tracker), ("variant", config.variant), ("seed", config.seed),
                ("params", dict(config.params))),
    )


def _overflow_warnings(result: RunResult) -> Iterable[KlogEvent]:
    recording = result.recording
    assert recording is not None
    for worker, lost in sorted(recording.ring_lost.items()):
        kept = [r for r in recording.records if r.worker == worker]
        when = recording.wall_time(kept[0].t_ns) if kept else recording.wall0_ns / 1e9
        yield KlogEvent(
            file="logview.py", line=0, level="W", time=when, pid=_pid(result, worker),
            logger=HARNESS_LOGGER, message="Ring overflow: oldest records overwritten",
            fields=(("worker", describe_worker(worker, result.workers)), ("lost", lost),
                    ("hint", "raise --ring-size")),
        )


def _pid(result: RunResult, worker: int) -> int:
    return result.workers[worker].pid if 0 <= worker < len(result.workers) else 0



