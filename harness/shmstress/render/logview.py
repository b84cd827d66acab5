"""Recorded points and log calls as klog text: the merged run log, the failure snippet.

Rendering happens after the run, from the records copied out of the rings:
every worker's records merged by (sequence number, sub-index), which is the
true global order of the points (a log call sits right after the point it
follows). Names, messages and verbosity come from the tracker's words.

A written log starts with one line naming the run ("Recorded run", with the
tracker and its parameters, and the id of the failure's bundle when there is
one), so ``shmstress log`` can find the tracker's words for a log file alone,
and can tell whether the log beside a bundle is that bundle's own. The order
of the lines is exact; their timestamps are taken just after the sequence
number, so two workers' stamps can be out of order by the microseconds between
the two.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from shmstress.analysis.focus import merged
from shmstress.analysis.snippet import Repeated, Snippet
from shmstress.core.files import replaced_atomically, write_text_new
from shmstress.core.result import RunResult
from shmstress.core.trace import LEVELS, Record, Recording
from shmstress.core.workers import describe_worker
from shmstress.plugin.wording import wording_by_name
from shmstress.plugin.words import MAX_VERBOSITY, Words
from shmstress.render.klog import KlogEvent, ParsedLine, format_event

CUT = "..."
"""Where a snippet left lines out."""

HARNESS_LOGGER = "shmstress"
RUN_HEADER = "Recorded run"

_LOGGING_LEVELS = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR}


@dataclass(frozen=True)
class Entry:
    """One record of the merged log, with what rendering and selecting it needs."""

    record: Record
    verbosity: int


def entries(recording: Recording, words: Words) -> list[Entry]:
    """Every point and log call, merged in global order."""
    levels: dict[int, int] = {}
    found: list[Entry] = []
    for record in merged(recording):
        level = levels.get(record.label)
        if level is None:
            level = levels[record.label] = words.verbosity(recording.labels[record.label].text)
        found.append(Entry(record, level))
    return found


def to_event(result: RunResult, words: Words, record: Record) -> KlogEvent:
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


def words_of(result: RunResult) -> Words:
    """The run's tracker's words; the defaults if the tracker cannot be loaded here."""
    return wording_by_name(result.config.tracker, result.config.params).words


def log_events(
    result: RunResult, verbosity: int = MAX_VERBOSITY, words: Words | None = None,
    bundle_id: str | None = None,
) -> Iterator[KlogEvent]:
    """The merged log: a header naming the run (and its bundle's id), ring overflow, the
    records up to ``verbosity``."""
    recording = result.recording
    if recording is None:
        return
    words = words or words_of(result)
    yield _header(result, recording, bundle_id)
    yield from _overflow_warnings(result)
    for entry in entries(recording, words):
        if entry.verbosity <= verbosity:
            yield to_event(result, words, entry.record)


def log_lines(
    result: RunResult, verbosity: int = MAX_VERBOSITY, words: Words | None = None,
    bundle_id: str | None = None,
) -> Iterator[str]:
    """The merged log as klog text (an event may span lines)."""
    return (format_event(event) for event in log_events(result, verbosity, words, bundle_id))


def write_log(
    result: RunResult, path: Path, verbosity: int = MAX_VERBOSITY, words: Words | None = None,
    bundle_id: str | None = None, exclusive: bool = False,
) -> Path:
    """Write the merged log of every worker to ``path``, whole or not at all; with
    ``exclusive`` only if nothing is there (a failure's log never replaces another's)."""
    with replaced_atomically(path, "the log", exclusive) as out:
        for text in log_lines(result, verbosity, words, bundle_id):
            out.write(text + "\n")
    return path


def write_new_log(
    result: RunResult, directory: Path, stem: str, verbosity: int = MAX_VERBOSITY,
    words: Words | None = None,
) -> Path:
    """Write the merged log into ``directory`` as ``<stem>.log``, or ``<stem>-2.log`` and so
    on: for a run with no bundle to sit beside (it broke), never over another run's log."""
    lines = (text + "\n" for text in log_lines(result, verbosity, words))
    return write_text_new(directory, stem, ".log", lines, "the log")


def snippet_text(result: RunResult, words: Words, snippet: Snippet) -> str:
    """A snippet's records as klog lines, ``...`` where lines were cut; "" if none."""
    return "\n".join(CUT if record is None else _repeated(record.times)
                     if isinstance(record, Repeated)
                     else format_event(to_event(result, words, record)) for record in snippet)


def _repeated(times: int) -> str:
    return f"{CUT} the line above {times:,} more time{'s' if times != 1 else ''}"


def to_log_records(result: RunResult, verbosity: int = MAX_VERBOSITY) -> list[logging.LogRecord]:
    """The merged log as ``logging`` records, for users who log through ``logging``.

    Formatted with ``harness.klog.KlogFormatter`` they give the lines of
    a written run log; any other handler sees ordinary records with the fields in
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


def words_of_log(events: Iterable[ParsedLine]) -> Words:
    """The words of the tracker a written log names in its header; the defaults if none."""
    for event in events:
        if (event.logger, event.message) == (HARNESS_LOGGER, RUN_HEADER):
            name, params = event.fields.get("tracker"), event.fields.get("params")
            if isinstance(name, str) and isinstance(params, dict):
                return wording_by_name(name, params).words
            break
    return Words()


def log_header(events: Iterable[ParsedLine]) -> Mapping[str, object] | None:
    """The fields of a written log's header line (tracker, variant, seed, params, and the
    bundle's id if it has one); None for text that has no header."""
    for event in events:
        if (event.logger, event.message) == (HARNESS_LOGGER, RUN_HEADER):
            return dict(event.fields)
    return None


def _header(result: RunResult, recording: Recording, bundle_id: str | None) -> KlogEvent:
    config = result.config
    fields: tuple[tuple[str, object], ...] = (
        ("tracker", config.tracker), ("variant", config.variant), ("seed", config.seed),
        ("params", dict(config.params)))
    if bundle_id:
        fields += (("bundle", bundle_id),)
    return KlogEvent(
        file="logview.py", line=0, level="I", time=recording.wall0_ns / 1e9, pid=0,
        logger=HARNESS_LOGGER, message=RUN_HEADER, fields=fields,
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



