"""Recorded points and log calls as klog text: the merged run log, the failure snippet.

Rendering happens after the run, from the records copied out of the rings:
every worker's records merged by (sequence number, sub-index), which is the
true global order of the points (a log call sits right after the point it
follows). Names, messages and verbosity come from the tracker's words.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError
from harness.focus import Focus, focus, words_of
from harness.klog import KlogEvent, format_event
from harness.log_words import MAX_VERBOSITY, LogWords
from harness.recording import LEVELS, Record, Recording
from harness.result import RunResult, Violation

SNIPPET_VERBOSITY = 1
"""The snippet shows upstream-style messages and other changes of shared state."""

SNIPPET_LEAD = 3
"""Events of the involved objects shown from before the window: how the initial state arose."""

SNIPPET_MAX_LINES = 60

CUT = "..."

_LOGGING_LEVELS = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR}


@dataclass(frozen=True)
class Entry:
    """One record of the merged log, with what rendering and selecting it needs."""

    record: Record
    verbosity: int


def entries(recording: Recording, words: LogWords) -> list[Entry]:
    """Every point and log call, merged in global order."""
    levels: dict[int, int] = {}
    merged: list[Entry] = []
    for record in heapq.merge(recording.records, recording.logs, key=lambda r: (r.seq, r.sub)):
        level = levels.get(record.label)
        if level is None:
            level = levels[record.label] = words.verbosity(recording.labels[record.label].text)
        merged.append(Entry(record, level))
    return merged


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


def log_lines(result: RunResult, verbosity: int = MAX_VERBOSITY) -> Iterator[str]:
    """The merged log as klog events (an event may span lines), ring overflow first."""
    recording = result.recording
    if recording is None:
        return
    words = words_of(result)
    yield from _overflow_warnings(result, words)
    for entry in entries(recording, words):
        if entry.verbosity <= verbosity:
            yield format_event(to_event(result, words, entry.record))


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
    recording = result.recording
    if recording is None:
        return []
    words = words_of(result)
    out = []
    for entry in entries(recording, words):
        if entry.verbosity > verbosity:
            continue
        event = to_event(result, words, entry.record)
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


def render_snippet(result: RunResult, violation: Violation | None = None) -> str:
    """The log lines that matter for a violation, ``...`` where lines were cut; "" if none."""
    found = focus(result, violation)
    if found is None or result.recording is None:
        return ""
    recording = result.recording
    visible = [
        e for e in entries(recording, found.words)
        if e.verbosity <= SNIPPET_VERBOSITY and e.record.seq <= found.end
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
    """Indices into ``visible``: the worker's window, the objects' events, and a short lead.

    Within one operation every line of its worker is context (other devices it saw
    in flight); in a window the harness chose, that worker's lines about other
    objects are noise.
    """
    kept: list[int] = []
    lead: list[int] = []
    for index, entry in enumerate(visible):
        record = entry.record
        involved, elsewhere = found.relevance(recording, record)
        if record.seq < found.start:
            if involved:
                lead = [*lead, index][-SNIPPET_LEAD:]
        elif involved or (
            record.worker == found.worker and (found.operation or not elsewhere)
        ):
            kept.append(index)
    return lead + kept


def _overflow_warnings(result: RunResult, words: LogWords) -> Iterable[str]:
    recording = result.recording
    assert recording is not None
    for worker, lost in sorted(recording.ring_lost.items()):
        kept = [r for r in recording.records if r.worker == worker]
        when = recording.wall_time(kept[0].t_ns) if kept else recording.wall0_ns / 1e9
        yield format_event(KlogEvent(
            file="logview.py", line=0, level="W", time=when, pid=_pid(result, worker),
            logger="shmstress", message="Ring overflow: oldest records overwritten",
            fields=(("worker", _describe(result, worker)), ("lost", lost),
                    ("hint", "raise --ring-size")),
        ))


def _pid(result: RunResult, worker: int) -> int:
    return result.workers[worker].pid if 0 <= worker < len(result.workers) else 0


def _describe(result: RunResult, worker: int) -> str:
    if 0 <= worker < len(result.workers):
        return result.workers[worker].describe()
    return f"worker {worker}"

