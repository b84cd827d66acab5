"""``shmstress log`` and the log options of ``shmstress run``: argument handling only.

``run --log PATH`` writes the merged klog text of every worker; a failing run
also writes ``<out>/run.log`` next to its bundle, and the run's report quotes
the snippet and the explanation. ``log`` filters a recorded log by the
objects a failure is about, with the words of the tracker the log names.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from shmstress.core.config import DEFAULT_RING_SIZE, MIN_RING_SIZE
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.files import ArtifactError
from shmstress.core.result import RunResult
from shmstress.plugin.words import MAX_VERBOSITY, Words
from shmstress.render.failure import FailureReport, report_lines
from shmstress.render.logfilter import EventFilter, Vocabulary, filter_events, parse_events
from shmstress.render.logview import words_of_log, write_log

RUN_LOG = "run.log"


def add_log_options(parser: argparse.ArgumentParser, what: str) -> argparse._ArgumentGroup:
    """``--log`` and ``--log-level``: where to write ``what``'s merged log, and how much."""
    group = parser.add_argument_group("log")
    group.add_argument("--log", metavar="PATH",
                       help=f"write the merged klog-style log of {what} to PATH")
    group.add_argument("--log-level", type=int, default=MAX_VERBOSITY, metavar="V",
                       help=f"verbosity of the written log, like klog's -v: 0 only the "
                       f"tracker's main messages ... {MAX_VERBOSITY} every point "
                       f"(default {MAX_VERBOSITY})")
    return group


def add_run_log_options(parser: argparse.ArgumentParser) -> None:
    group = add_log_options(
        parser, "every worker (a failing run also writes run.log into its --out directory)")
    group.add_argument("--ring-size", type=int, default=DEFAULT_RING_SIZE, metavar="N",
                       help="records kept per worker; older ones are overwritten and "
                       f"counted (default {DEFAULT_RING_SIZE}, at least {MIN_RING_SIZE})")


def validate_log_options(args: argparse.Namespace) -> None:
    """Usage errors before anything starts."""
    if not 0 <= args.log_level <= MAX_VERBOSITY:
        raise ConfigError(f"--log-level must be 0..{MAX_VERBOSITY}, got {args.log_level}")


def report_run_log(
    args: argparse.Namespace, result: RunResult, report: FailureReport | None, words: Words
) -> tuple[list[str], list[ArtifactError]]:
    """Write the run's log where asked; the report lines (snippet, explanation, paths) and
    the logs that could not be written (a full disk: no cut log is left under its name).

    A run that failed writes ``run.log`` into its ``--out`` directory; so does a run that
    broke (a worker crashed or hung): its log is what happened up to then."""
    lines: list[str] = []
    unwritten: list[ArtifactError] = []
    recording = result.recording
    if recording is None:
        return lines, unwritten
    if recording.ring_lost:
        lost = sum(recording.ring_lost.values())
        lines.append(f"  log: {lost:,} records overwritten in the workers' rings "
                     "(older events are missing; raise --ring-size)")
    if report is not None:
        lines += report_lines(report)
    targets: list[Path] = []
    if args.log:
        targets.append(Path(args.log))
    out = getattr(args, "out", None)  # the bundle directory, when the run has one
    broke = result.exit_code == ExitCode.BROKEN
    if out and (result.violation_count or broke):
        targets.append(Path(out) / RUN_LOG)
    for path in dict.fromkeys(targets):
        try:
            write_log(result, path, args.log_level, words)
        except ArtifactError as exc:
            unwritten.append(exc)
            continue
        lines.append(f"  log: {path}")
    return lines, unwritten


def _cmd_log(args: argparse.Namespace) -> int:
    events = parse_events(_read_log(Path(args.source)))
    words = words_of_log(event.parsed for event in events)
    wanted = EventFilter(objects=tuple(args.match), pids=tuple(args.pid))
    matching = filter_events(events, wanted, Vocabulary(words.kinds, words.related))
    try:
        for event in matching:
            sys.stdout.write(event + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `shmstress log ... | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _read_log(source: Path) -> str:
    """The log of a run directory, of a bundle (embedded, beside it, or made again by
    replaying it), or a log file."""
    if source.is_dir():
        return _read(source / RUN_LOG)
    if source.suffix == ".json":
        try:
            bundle = json.loads(_read(source))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source} is not a JSON bundle: {exc}") from exc
        embedded = bundle.get("log") if isinstance(bundle, dict) else None
        if isinstance(embedded, str):
            return embedded
        beside = source.parent / RUN_LOG
        return _read(beside) if beside.exists() else _replayed_log(source)
    return _read(source)


def _replayed_log(source: Path) -> str:
    """A bundle replays exactly, so its log can be made again: replay it, recorded."""
    from shmstress.render.logview import log_lines
    from shmstress.repro.bundle import load_bundle
    from shmstress.repro.replay import replay_bundle

    print(f"shmstress log: no {RUN_LOG} beside {source}; replaying the bundle for its log",
          file=sys.stderr)
    report = replay_bundle(load_bundle(source))
    return "".join(line + "\n" for line in log_lines(report.result, MAX_VERBOSITY))


def _read(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not a shmstress log or bundle: not UTF-8 text (byte "
                          f"{exc.start}: {raw[exc.start:exc.start + 1]!r})") from None


def _kind_name(text: str) -> tuple[str, str]:
    kind, equals, name = text.partition("=")
    if not (kind and equals and name):
        raise argparse.ArgumentTypeError(f"expected KIND=NAME, got {text!r}")
    return kind, name


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "log", help="show a recorded log, filtered by the objects its fields name, or worker pid",
        description="Print the events of a recorded klog-style log (a run's --out directory, "
        "its bundle, or a log file) that name any of the given objects; no filter prints all. "
        "A bundle with no run.log beside it is replayed to make its log again. "
        "An object is KIND=NAME, KIND being any field key of the tracker's log lines. "
        "A name matches a field value equal to it, ending in /NAME, or, for a number, "
        "ending in that number (with the dra tracker, --match claim=553 matches "
        "claim=\"ns/claim-0553\"); it must name one object of the log, else the candidates "
        "are listed. With the words of the tracker the log names, fields that name an "
        "object under another key and objects that belong to it match too.",
    )
    parser.add_argument("source", metavar="BUNDLE_OR_DIR",
                        help="a directory with run.log, a bundle (.json) or a log file")
    parser.add_argument("--match", action="append", default=[], type=_kind_name,
                        metavar="KIND=NAME", help="events naming this object: any field key "
                        "of any tracker, e.g. pod=my-pod-0006, card=3 (repeatable)")
    parser.add_argument("--pid", action="append", default=[], type=int, metavar="PID",
                        help="events of this worker process (repeatable)")
    parser.set_defaults(handler=_cmd_log)
