"""``shmstress import-log LOG --tracker T``: a flake's own log, reproduced in the model.

Exits 1 when an execution that holds the log's lines in order breaks an invariant
(its bundle is written into --out and replays like any other), 3 when the lines
were matched but no matching execution broke anything (the model does not
reproduce the failure: what the model did where it came closest is printed), 8
when no execution tried holds the lines in order (the first line none produced
is printed, with what the model did there instead), 2 with one line for a log
that cannot be read or a tracker that cannot be loaded.
"""

from __future__ import annotations

import argparse
import textwrap
from collections import Counter
from pathlib import Path

from shmstress.cli.args import with_examples
from shmstress.cli.commands import add_command
from shmstress.cli.run import verdict
from shmstress.controlled.log_search import MissKey
from shmstress.core.config import default_out
from shmstress.core.errors import ConfigError
from shmstress.core.files import ArtifactError, require_writable
from shmstress.core.trace import step_number
from shmstress.plugin import registry
from shmstress.plugin.wording import wording_of
from shmstress.repro.bundle import replay_command, write_bundle_into
from shmstress.testing.log_import import (
    ANYWHERE,
    MARKED,
    ImportReport,
    SearchOptions,
    import_log,
)


def render_import(report: ImportReport, source: Path) -> list[str]:
    """What was matched, what was not and why, and what the search found."""
    found = report.search
    config = report.config
    params = ", ".join(f"{key}={value}" for key, value in sorted(config.params.items()))
    lines = [f"shmstress import-log: {source} into {config.tracker} {config.variant} "
             f"({params or 'default parameters'})"]
    target = found.target.lines
    lines.append(f"  lines the model can log: {len(target)}; unreadable: "
                 f"{len(report.unreadable)}; unmatched: {len(found.unmatched)}")
    for bad in report.unreadable:
        lines.append(f"    line {bad.number}: unreadable ({bad.why})")
    for unmatched in found.unmatched:
        lines.append(f"    line {unmatched.line.line}: not matched: {unmatched.why}")
    lines.append(f"  search: {found.executions:,} executions in {found.elapsed_s:.1f} s, "
                 f"{found.matches:,} matched every line")
    match = found.match
    if match is None:
        first = target[found.deepest] if found.deepest < len(target) else None
        if first is not None:
            lines.append(f"  first line no execution produced: line {first.line}: "
                         f"{first.message} (after {found.deepest} matched)")
        lines.extend(_instead(report, found.deepest))
        return lines
    lines.append("  matched:")
    for expected, seen in match.matching.matched:
        lines.append(f"    line {expected.line:>4}: step {step_number(seen.seq):>4} "
                     f"{config_worker(report, seen.worker)}: {expected.message}")
    if report.names:
        lines.append("  names (model -> log):")
        lines.extend(f"    {model} -> {log}" for model, log in sorted(report.names.items())
                     if "\n" not in model + log)
    violation = match.outcome.principal_violation
    if violation is None:
        lines.append("  no invariant broke in any matching execution: the model does not "
                     "reproduce the failure")
        lines.extend(_instead(report, None))
        return lines
    lines.append(f"  reproduced: {violation.invariant}: {violation.message}")
    if report.failure is not None and report.failure.explanation:
        lines += ["  explanation:", textwrap.indent(report.failure.explanation, "    ")]
    return lines


def config_worker(report: ImportReport, worker: int) -> str:
    return report.search.workers[worker].describe()


def _instead(report: ImportReport, depth: int | None) -> list[str]:
    """Where executions left the log most often: at ``depth`` lines matched, or (None) at
    any depth where a worker logged what the log does not have; each worker's steps in
    the tracker's words."""
    found = report.search
    words = wording_of(registry.load(report.config.tracker), report.config.params).words
    misses: Counter[MissKey] = Counter()
    for matched, counted in found.misses.items():
        if depth is None or matched == depth:
            misses.update({key: count for key, count in counted.items()
                           if depth is not None or key[1]})
    out = []
    for (index, who, message, recent, waiting), count in misses.most_common(3):
        if not 0 <= index < len(found.target.lines):
            continue
        line = found.target.lines[index]
        if not who:
            out.append(f"  {count:,} executions waited for line {line.line} ({line.message}) "
                       "until they gave up")
            continue
        steps = ", ".join(words.step(label, {}) or label for label in recent)
        did = "was about to log" if waiting else "logged"
        out.append(f"  {count:,} executions left the log where line {line.line} "
                   f"({line.message}) was due: {who} {did} {message!r}; its steps since "
                   f"its last matched line: {steps}")
    return out


def _cmd_import_log(args: argparse.Namespace) -> int:
    source = Path(args.log)
    out = Path(args.out)
    require_writable(out, "the --out directory", directory=True)
    try:
        text = source.read_text(errors="replace")
    except OSError as exc:
        raise ConfigError(f"cannot read {source}: {exc.strerror or exc}") from None
    if args.executions < 1:
        raise ConfigError(f"--executions must be >= 1, got {args.executions}")
    options = SearchOptions(executions=args.executions, seed=args.seed,
                            time_limit_s=args.time_limit)
    report = import_log(text, args.tracker, args.variant, args.gaps, options)
    lines = render_import(report, source)
    unwritten: list[ArtifactError] = []
    if report.bundle is not None:
        try:
            path = write_bundle_into(report.bundle, out)
            lines += ["  bundle:", f"    {path}", "  replay it:", f"    {replay_command(path)}"]
        except ArtifactError as exc:
            unwritten.append(exc)
    print("\n".join(lines))
    return verdict(int(report.exit_code), unwritten)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(
        sub, "import-log",
        description="Read a klog or ktesting log of a real failure, map each line to a "
        "point of the tracker through its words (message -> point, fields -> objects, "
        "thread -> worker), and search the model for an execution that logs the lines in "
        "their order. Exit 1 when such an execution breaks an invariant (its bundle is "
        "written, and replays); 3 when the lines were matched but nothing broke; 8 when no "
        "execution tried produces the lines in order (the first such line is printed).",
        **with_examples(
            "shmstress import-log flake.log --tracker dra --variant gather-unchecked",
            "shmstress import-log flake.log --tracker dra --variant fixed   # fixed there?",
            "shmstress import-log cut.log --tracker dra --gaps anywhere   # lines cut unmarked",
        ),
    )
    parser.add_argument("log", metavar="LOG", help="the log: klog or ktesting text, as pasted "
                        "(indented, with '...' where lines were left out)")
    parser.add_argument("--tracker", required=True, help="the tracker whose model the log "
                        "is of (a name from `shmstress list`, or path/to/file.py:Class)")
    parser.add_argument("--variant", default=None, help="the variant (default: the "
                        "tracker's first)")
    parser.add_argument("--gaps", choices=(MARKED, ANYWHERE), default=MARKED,
                        help="where the log may have left lines out: 'marked' (only at "
                        "'...' lines, before its first and after its last line: the default) "
                        "or 'anywhere' (lines were cut without a mark)")
    parser.add_argument("--executions", type=int, default=SearchOptions().executions,
                        metavar="N", help="executions the search may spend (default "
                        f"{SearchOptions().executions})")
    parser.add_argument("--time-limit", type=float, default=SearchOptions().time_limit_s,
                        metavar="S", help="seconds the search may spend (default "
                        f"{SearchOptions().time_limit_s:g})")
    parser.add_argument("--seed", type=int, default=SearchOptions().seed,
                        help="seed of the search's choices (default %(default)s)")
    parser.add_argument("--out", default=default_out(), metavar="DIR",
                        help="where the bundle is written (default %(default)s)")
    parser.set_defaults(handler=_cmd_import_log)
