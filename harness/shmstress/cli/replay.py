"""``shmstress replay BUNDLE`` and ``shmstress shrink BUNDLE -o SMALLER``: arguments and output.

replay exits 1 when the bundle's violation is reproduced (the failure is
there, as recorded), 3 when the replay diverged, did not reproduce it or hit
a different violation, 4 when a worker crashed during the replay, and 2 with
one line when the bundle cannot be read or does not fit its tracker.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from shmstress.cli.args import with_examples
from shmstress.cli.code_options import BUNDLE_CODE_NOTE, add_code_options, code_allowance
from shmstress.cli.commands import add_command
from shmstress.cli.log import add_log_options, validate_log_options
from shmstress.cli.run import verdict
from shmstress.cli.test import replay_plain_bundle, shrink_plain_bundle
from shmstress.core.errors import BundleError, ConfigError, ReplayDivergedError
from shmstress.core.exit_reason import ExitCode
from shmstress.core.files import ArtifactError, require_writable
from shmstress.render.log_names import failure_in_names
from shmstress.render.replay_text import render_replay
from shmstress.repro.bundle import bundle_target, new_bundle_id, replay_command, write_bundle
from shmstress.repro.loading import open_bundle
from shmstress.repro.plain_bundle import PlainBundle
from shmstress.repro.replay import replay_bundle
from shmstress.repro.shrink import ShrinkOptions, ShrinkReport, shrink_bundle


@contextlib.contextmanager
def _about(path: Path) -> Iterator[None]:
    """Name the bundle in a BundleError that is found only once the tracker is loaded."""
    try:
        yield
    except BundleError as exc:
        raise BundleError(f"{path}: {exc}") from exc


def _cmd_replay(args: argparse.Namespace) -> int:
    validate_log_options(args)
    if args.log:
        require_writable(Path(args.log), "the --log file")
    path = Path(args.bundle)
    bundle = open_bundle(path, code_allowance(args))
    if isinstance(bundle, PlainBundle):  # plain multiprocessing code (``shmstress test``)
        return replay_plain_bundle(path, bundle, args.log)
    with _about(path):
        report = replay_bundle(bundle, pin=not args.no_pin)
    print(render_replay(report, path))
    unwritten: list[ArtifactError] = []
    if args.log:
        from shmstress.render.logview import write_log

        try:
            logged = write_log(report.result, Path(args.log), args.log_level,
                               bundle_id=bundle.id)  # the same failure: its header says so
            print(f"  log: {logged}")
        except ArtifactError as exc:
            unwritten.append(exc)
    return verdict(report.exit_code, unwritten)


def render_shrink(report: ShrinkReport, source: Path, target: Path, written: bool = True) -> str:
    """What the search found; the replay command only when the bundle was ``written``."""
    before, after = report.before, report.after
    lines = [
        f"shmstress shrink: {source} -> {target}",
        f"  {'':12} {'preemptions':>12} {'steps':>10} {'workers':>8}  scenario",
        f"  {'before':12} {before.preemptions:>12,} {before.steps:>10,} {before.workers:>8}  "
        f"{before.scenario}",
        f"  {'after':12} {after.preemptions:>12,} {after.steps:>10,} {after.workers:>8}  "
        f"{after.scenario}",
        f"  {report.executions:,} executions in {report.elapsed_s:.2f} s",
        f"  still fails with: {report.bundle.violation.invariant}: "
        f"{report.bundle.violation.message}",
    ]
    explanation = failure_in_names(report.replay.result, report.bundle.names,
                                   str(target)).explanation
    if explanation:
        lines += ["  explanation:", textwrap.indent(explanation, "    ")]
    if written:
        lines += ["  replay it:", f"    {replay_command(target)}"]
    return "\n".join(lines)


SHRINK_SECONDS = 45.0
"""The CLI's default time for a shrink's search: a user waits a minute at most unasked."""


def _progress(line: str) -> None:
    """A shrink of a long free failure takes a while: one line per stage on stderr."""
    print(line, file=sys.stderr, flush=True)


def _cmd_shrink(args: argparse.Namespace) -> int:
    if args.max_executions < 1:
        raise ConfigError(f"--max-executions must be >= 1, got {args.max_executions}")
    if args.max_seconds <= 0:
        raise ConfigError(f"--max-seconds must be > 0, got {args.max_seconds}")
    source = Path(args.bundle)
    output = Path(args.output)
    bundle = open_bundle(source, code_allowance(args))
    options = ShrinkOptions(max_executions=args.max_executions, max_seconds=args.max_seconds,
                            pin=not args.no_pin, progress=_progress)
    if isinstance(bundle, PlainBundle):  # plain multiprocessing code (``shmstress test``)
        require_writable(output, "the shrunk bundle", directory=output.suffix != ".json")
        return shrink_plain_bundle(source, bundle, output, options)
    require_writable(output, "the shrunk bundle", directory=output.is_dir() or not output.suffix)
    with _about(source):
        report = shrink_bundle(bundle, options)
    if report is None:
        raise ReplayDivergedError(
            f"{source} does not reproduce its violation, so there is nothing to shrink "
            f"(see `{replay_command(source)}`)")
    shrunk = replace(report.bundle, id=new_bundle_id())  # a new artifact, a name of its own
    target = bundle_target(shrunk, output)
    try:  # a named file is the user's to replace; a directory gets a free name
        target = write_bundle(shrunk, output, overwrite=True)
    except ArtifactError as exc:  # what the search found is still shown, the file is not
        print(render_shrink(report, source, target, written=False))
        return verdict(int(ExitCode.CLEAN), [exc])
    print(render_shrink(report, source, target))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = add_command(
        sub, "replay",
        description="Take the bundle's recorded steps one at a time, checking each label; "
        "exit 1 and print 'reproduced' with the violation; exit 3 on divergence, if the "
        "violation does not occur or another one does; exit 2 "
        "if the bundle cannot be read or does not fit its tracker. " + BUNDLE_CODE_NOTE,
        **with_examples(
            "shmstress replay shmstress-out/dra-gather-unchecked-free-seed3-1f0c9a2e.json",
            "shmstress replay BUNDLE --log replayed.log --log-level 2   # its log, fewer points",
            "shmstress replay /tmp/x/b.json --code /tmp/x/scenario.py   # code outside this "
            "directory",
        ),
    )
    replay.add_argument("bundle", metavar="BUNDLE", help="a repro bundle (JSON) a failing run "
                        "wrote into its --out directory")
    replay.add_argument("--no-pin", action="store_true",
                        help="do not pin the replay to one CPU")
    add_log_options(replay, "the replayed execution")
    add_code_options(replay)
    replay.set_defaults(handler=_cmd_replay)

    shrink = add_command(
        sub, "shrink",
        description="Search for a schedule that breaks the same invariant in the fewest "
        "steps and preemptions (a short churn, a fresh search within short step bounds, "
        "fewer switches), then the fewest workers and smallest scenario; for plain code "
        "(a bundle of shmstress test), every schedule with fewer preemptions, then a "
        "search for fewer steps. Writes it as a bundle that replays. One line per stage on "
        "stderr; the search stops at --max-executions or --max-seconds, whichever comes "
        "first. " + BUNDLE_CODE_NOTE,
        **with_examples(
            "shmstress shrink BUNDLE -o small.json",
            "shmstress shrink BUNDLE -o small.json --max-executions 500   # a shorter search",
            "shmstress shrink BUNDLE -o small.json --max-seconds 600   # a longer one",
            "shmstress shrink counter-racy-plain-seed2-e5.json -o small.json   # shmstress test",
        ),
    )
    shrink.add_argument("bundle", metavar="BUNDLE", help="the repro bundle to shrink")
    shrink.add_argument("-o", "--output", required=True, metavar="SMALLER",
                        help="where to write the shrunk bundle (a file, or a directory)")
    shrink.add_argument("--max-executions", type=int, default=ShrinkOptions().max_executions,
                        metavar="N", help="executions the search may spend (default "
                        f"{ShrinkOptions().max_executions})")
    shrink.add_argument("--max-seconds", type=float, default=SHRINK_SECONDS, metavar="S",
                        help="seconds the search may spend, whichever of the two budgets "
                        f"runs out first (default {SHRINK_SECONDS:g}: with the replay "
                        "that checks the result, a shrink ends within a minute)")
    shrink.add_argument("--no-pin", action="store_true",
                        help="do not pin the search to one CPU")
    add_code_options(shrink)
    shrink.set_defaults(handler=_cmd_shrink)
