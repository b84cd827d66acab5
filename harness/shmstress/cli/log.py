"""``shmstress log`` and the log options of ``shmstress run``: argument handling only.

``run --log PATH`` writes the merged klog text of every worker; a failing run
also writes its own log next to its bundle, ``<bundle stem>.log`` (never over
another run's: each failure's bundle has a name of its own), and the run's
report quotes the snippet and the explanation. ``log BUNDLE`` reads that log
only if its header names the bundle, else it replays the bundle: printing
another run's log under this bundle's name would be worse than nothing.
``log`` filters a recorded log by the objects a failure is about, with the
words of the tracker the log names.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from shmstress.cli.args import with_examples
from shmstress.cli.code_options import BUNDLE_CODE_NOTE, add_code_options, code_allowance
from shmstress.cli.commands import add_command
from shmstress.core.config import DEFAULT_RING_SIZE, MIN_RING_SIZE
from shmstress.core.errors import BundleError, ConfigError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.files import ArtifactError
from shmstress.core.result import RunResult
from shmstress.plugin.words import MAX_VERBOSITY, Words
from shmstress.render.failure import FailureReport, report_lines
from shmstress.render.logfilter import (
    Event,
    EventFilter,
    Vocabulary,
    filter_events,
    parse_events,
)
from shmstress.render.logview import log_header, words_of_log, write_log, write_new_log
from shmstress.repro.bundle import Bundle, bundle_stem, log_path, path_safe, replay_command
from shmstress.repro.bundle_code import CodeAllowance, require_trusted_code, tracker_code
from shmstress.repro.bundle_json import parse_json
from shmstress.repro.loading import read_bundle, trusted
from shmstress.repro.plain_bundle import PlainBundle

LEGACY_RUN_LOG = "run.log"
"""Where releases before per-bundle logs wrote every failing run's log: read only when its
header says it is the bundle's."""


def add_log_options(parser: argparse.ArgumentParser, what: str) -> argparse._ArgumentGroup:
    """``--log`` and ``--log-level``: where to write ``what``'s merged log, and how much."""
    group = parser.add_argument_group("log")
    group.add_argument("--log", metavar="PATH",
                       help=f"write the merged klog-style log of {what} to PATH")
    group.add_argument("--log-level", type=log_level, default=MAX_VERBOSITY, metavar="LEVEL",
                       help=f"how much the written log holds: main (only the tracker's main "
                       f"messages), all (every point; the default), or a number like klog's "
                       f"-v, 0 (= main) to {MAX_VERBOSITY} (= all)")
    return group


LOG_LEVELS = {"main": 0, "all": MAX_VERBOSITY}
"""Names for the ends of klog's -v scale, for those who do not think in numbers."""


def log_level(text: str) -> int:
    """argparse type of ``--log-level``: a name of ``LOG_LEVELS`` or a number 0..9."""
    if text.lower() in LOG_LEVELS:
        return LOG_LEVELS[text.lower()]
    try:
        level = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a level: main, all, or 0..{MAX_VERBOSITY}") from None
    if not 0 <= level <= MAX_VERBOSITY:
        raise argparse.ArgumentTypeError(f"{level} is not a level: main, all, or "
                                         f"0..{MAX_VERBOSITY}")
    return level


def add_run_log_options(parser: argparse.ArgumentParser) -> None:
    group = add_log_options(
        parser, "every worker (a failing run also writes its log beside its bundle in --out, "
        "as <bundle name>.log)")
    group.add_argument("--ring-size", type=int, default=DEFAULT_RING_SIZE, metavar="N",
                       help="records kept per worker; older ones are overwritten and "
                       f"counted (default {DEFAULT_RING_SIZE}, at least {MIN_RING_SIZE})")


def validate_log_options(args: argparse.Namespace) -> None:
    """Usage errors before anything starts."""
    if not 0 <= args.log_level <= MAX_VERBOSITY:
        raise ConfigError(f"--log-level must be 0..{MAX_VERBOSITY}, got {args.log_level}")


def report_run_log(
    args: argparse.Namespace, result: RunResult, report: FailureReport | None, words: Words,
    bundle: Bundle | None = None, bundle_path: Path | None = None,
) -> tuple[list[str], list[ArtifactError]]:
    """Write the run's log where asked; the report lines (snippet, explanation, paths) and
    the logs that could not be written (a full disk: no cut log is left under its name).

    A run that failed writes its log beside its bundle (``<bundle stem>.log``, its header
    naming the bundle's id); so does a run that broke (a worker crashed or hung), under a
    free name of its own: its log is what happened up to then. Neither replaces a file."""
    lines: list[str] = []
    unwritten: list[ArtifactError] = []
    recording = result.recording
    if recording is None:
        if args.log and result.exit_code == ExitCode.INTERRUPTED:  # not decoded: see run
            lines.append(f"  log: {args.log} not written: the run was interrupted before "
                         "it found a violation")
        return lines, unwritten
    broke = result.exit_code == ExitCode.BROKEN
    wanted = bool(args.log) or bool(result.violation_count) or broke  # a log is read
    if recording.ring_lost and wanted:  # a clean run's lost records matter to nobody
        lost = sum(recording.ring_lost.values())
        lines.append(f"  log: {lost:,} records overwritten in the workers' rings "
                     "(older events are missing; raise --ring-size)")
    if report is not None:
        lines += report_lines(report)
    bundle_id = bundle.id if bundle is not None else None
    written: list[Path] = []
    try:
        if args.log:
            written.append(write_log(result, Path(args.log), args.log_level, words, bundle_id))
    except ArtifactError as exc:
        unwritten.append(exc)
    out = getattr(args, "out", None)  # the bundle directory, when the run has one
    try:
        if out and bundle_path is not None:
            written.append(write_log(result, log_path(bundle_path), args.log_level, words,
                                     bundle_id, exclusive=True))
        elif out and (result.violation_count or broke):  # no bundle (or it was not written)
            stem = bundle_stem(bundle) if bundle is not None else _run_stem(result)
            written.append(write_new_log(result, Path(out), stem, args.log_level, words))
    except ArtifactError as exc:
        unwritten.append(exc)
    lines += [f"  log: {path}" for path in written]
    return lines, unwritten


def _run_stem(result: RunResult) -> str:
    """The name of a log with no bundle to sit beside: what ran, and its seed."""
    config = result.config
    tracker = path_safe(Path(config.tracker.split(":")[0]).stem, "_")
    return f"{tracker}-{path_safe(config.variant or 'default')}-seed{config.seed}"


def _cmd_log(args: argparse.Namespace) -> int:
    source, allowance = Path(args.source), code_allowance(args)
    events = parse_events(_read_log(source, allowance))
    words = _words(source, events, allowance)
    wanted = EventFilter(objects=tuple(args.match), pids=tuple(args.pid))
    matching = filter_events(events, wanted, Vocabulary(words.kinds, words.related))
    try:
        for event in matching:
            sys.stdout.write(event + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `shmstress log ... | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _words(source: Path, events: Sequence[Event], allowance: CodeAllowance) -> Words:
    """The words of the tracker the log's header names, which loading imports: so its file
    must be one a bundle's could be (``repro.bundle_code``)."""
    header = log_header(event.parsed for event in events)
    tracker = header.get("tracker") if header is not None else None
    if isinstance(tracker, str):
        try:
            require_trusted_code(tracker_code(tracker), None, allowance)
        except BundleError as exc:
            raise BundleError(f"{source}: the log's header names a tracker: {exc}") from None
    return words_of_log(event.parsed for event in events)


def _read_log(source: Path, allowance: CodeAllowance) -> str:
    """The log of a run directory (its one log), of a bundle (embedded, its own beside it,
    or made again by replaying it), or a log file."""
    if source.is_dir():
        return _read(_only_log(source))
    if source.suffix == ".json":
        try:
            data = parse_json(_read(source))
        except BundleError as exc:
            raise BundleError(f"{source} is not a JSON bundle: {exc}") from None
        embedded = data.get("log") if isinstance(data, dict) else None
        if isinstance(embedded, str):
            return embedded
        return _own_log(source, allowance)
    return _read(source)


def _only_log(directory: Path) -> Path:
    """The log of a directory that holds one; with several, the user names one: guessing
    would print one run's log as another's."""
    logs = sorted((p for p in directory.glob("*.log") if not p.name.startswith(".")),
                  key=lambda p: (p.stat().st_mtime, p.name))
    if not logs:
        raise ConfigError(f"{directory} holds no run log (a failing run writes "
                          "<bundle name>.log beside its bundle)")
    if len(logs) > 1:
        names = ", ".join(p.name for p in logs[-3:][::-1])
        raise ConfigError(f"{directory} holds {len(logs)} run logs; name a bundle or a log "
                          f"(the newest: {names})")
    return logs[0]


def _own_log(source: Path, allowance: CodeAllowance) -> str:
    """The log beside bundle ``source`` whose header names it; else the bundle replayed."""
    bundle = read_bundle(source)
    if isinstance(bundle, PlainBundle):  # ``shmstress test``: its log is written with it
        beside = log_path(source)
        if not beside.is_file():
            raise ConfigError(f"no {beside.name} beside {source}; replay it for its log: "
                              f"{replay_command(source, '--log', 'FILE')}")
        return _read(beside)
    why = f"no {log_path(source).name} beside {source}"
    for candidate in (log_path(source), source.parent / LEGACY_RUN_LOG):
        if not candidate.is_file():
            continue
        text = _read(candidate)
        mismatch = _mismatch(log_header(e.parsed for e in parse_events(text)), bundle)
        if mismatch is None:
            return text
        why = f"{candidate} is not this bundle's log ({mismatch})"
        if candidate == log_path(source):
            break
    return _replayed_log(source, trusted(source, bundle, allowance), why)


def _mismatch(header: Mapping[str, object] | None, bundle: Bundle) -> str | None:
    """Why a log with ``header`` is not the log of ``bundle``; None when it is."""
    if header is None:
        return "it has no header naming its run"
    for key, want in (("tracker", bundle.tracker), ("variant", bundle.variant),
                      ("seed", bundle.seed)):
        if header.get(key) != want:
            return f"its {key} is {header.get(key)!r}, the bundle's {want!r}"
    found = header.get("bundle")
    if (bundle.id or found) and found != bundle.id:
        return f"it names bundle {found or '(none)'}, this one is {bundle.id or '(no id)'}"
    return None


def _replayed_log(source: Path, bundle: Bundle, why: str) -> str:
    """A bundle replays exactly, so its log can be made again: replay it, recorded (its
    code already allowed to run: ``repro.loading.trusted``)."""
    from shmstress.render.log_names import wording_in_names
    from shmstress.render.logview import log_lines
    from shmstress.repro.replay import replay_bundle

    print(f"shmstress log: {why}; replaying the bundle for its log", file=sys.stderr)
    report = replay_bundle(bundle)
    words = wording_in_names(report.result, bundle.names).words  # import-log's: the log's
    return "".join(line + "\n" for line in log_lines(report.result, MAX_VERBOSITY, words,
                                                       bundle_id=bundle.id))


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
    parser = add_command(
        sub, "log",
        description="Print the events of a recorded klog-style log (a run's --out directory, "
        "its bundle, or a log file) that name any of the given objects; no filter prints all. "
        "A bundle's own log is the one beside it (<bundle name>.log) whose header names it; "
        "a bundle without one is replayed to make its log again. "
        "An object is KIND=NAME, KIND being any field key of the tracker's log lines. "
        "A name matches a field value equal to it, ending in /NAME, or, for a number, "
        "ending in that number (with the dra tracker, --match claim=553 matches "
        "claim=\"ns/claim-0553\"); it must name one object of the log, else the candidates "
        "are listed. With the words of the tracker the log names, fields that name an "
        "object under another key and objects that belong to it match too. "
        + BUNDLE_CODE_NOTE + " The tracker a log's header names is imported for its words, "
        "under the same rule.",
        **with_examples(
            "shmstress log shmstress-out/dra-gather-unchecked-free-seed3-1f0c9a2e.json",
            "shmstress log BUNDLE --match claim=553   # what happened to one claim",
            "shmstress log BUNDLE --pid 4242   # one worker's events",
        ),
    )
    parser.add_argument("source", metavar="BUNDLE_OR_DIR",
                        help="a bundle (.json), a log file, or a directory holding one log")
    parser.add_argument("--match", action="append", default=[], type=_kind_name,
                        metavar="KIND=NAME", help="events naming this object: any field key "
                        "of any tracker, e.g. pod=my-pod-0006, card=3 (repeatable)")
    parser.add_argument("--pid", action="append", default=[], type=int, metavar="PID",
                        help="events of this worker process (repeatable)")
    add_code_options(parser)
    parser.set_defaults(handler=_cmd_log)
