"""``shmstress show BUNDLE [--svg FILE]``: the swimlane of a failure, in the terminal and as SVG.

A bundle holds the schedule but not the fields of its steps, so ``show`` replays it
(recorded, as ``log`` does for a bundle without its log) and draws the failure from
the replay's analysis: the same window and racing steps as the explanation that
``replay`` prints. It exits 0 when it showed the failure, 2 with one line when the
file is not a bundle, and like ``replay`` (3, 4) when the bundle did not reproduce.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from shmstress.analysis.failure import analyse
from shmstress.analysis.plain_story import plain_story
from shmstress.analysis.swimlane import Swimlane, plain_swimlane, swimlane
from shmstress.cli.args import EPILOG
from shmstress.cli.code_options import BUNDLE_CODE_NOTE, add_code_options, code_allowance
from shmstress.cli.commands import add_command
from shmstress.core.files import require_writable, write_text_atomically
from shmstress.plugin.renaming import rename_text
from shmstress.render.failure import swimlane_title
from shmstress.render.log_names import wording_in_names
from shmstress.render.swimlane import render_svg, render_text
from shmstress.repro.bundle_code import CodeAllowance
from shmstress.repro.loading import open_bundle
from shmstress.repro.plain_bundle import PlainBundle
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict, replay_bundle

EXAMPLES = """examples:
  shmstress show shmstress-out/dra-gather-unchecked-controlled-seed0-e12.json
  shmstress show BUNDLE --svg race.svg      # also draw it, for a browser or a PR comment
  shmstress show BUNDLE --all --width 200   # every step of the window, nothing folded
  shmstress show shmstress-out/counter-racy-plain-seed2-e5.json   # a `shmstress test` failure
  shmstress show /tmp/x/b.json --code /tmp/x/scenario.py   # code outside this directory
"""


def bundle_swimlane(path: Path, allowance: CodeAllowance, keep_all: bool = False
                    ) -> tuple[Swimlane | None, str, int]:
    """(the swimlane of the bundle at ``path``, or None; a line saying why not; exit code).

    A plain-code bundle (``shmstress test``) is drawn from its replayed steps: they carry
    what each process read and wrote. Raises BundleError (exit 2) for a file that is not
    a bundle, or one naming code ``allowance`` does not let run; ``keep_all`` does not
    apply to plain bundles (their story picks the steps)."""
    bundle = open_bundle(path, allowance)
    if isinstance(bundle, PlainBundle):
        replayed = replay_plain(bundle)
        if replayed.verdict is not Verdict.REPRODUCED:
            return None, (f"shmstress show: {path} did not replay its failure "
                          f"({replayed.verdict.value}: {replayed.detail}); nothing to draw"), \
                int(replayed.exit_code)
        outcome = replayed.outcome
        title = f"{bundle.scenario}, seed {bundle.seed}: who did what when"
        return plain_swimlane(outcome, plain_story(outcome), title), "", 0
    report = replay_bundle(bundle)
    if report.verdict is not Verdict.REPRODUCED:
        return None, (f"shmstress show: {path} did not replay its failure "
                      f"({report.verdict.value}: {report.detail}); nothing to draw"), \
            int(report.exit_code)
    result = report.result
    recording = result.recording
    assert recording is not None  # replayed with record=True
    analysis = analyse(result, wording_in_names(result, bundle.names), result.violations[0])
    if analysis is None:
        return None, f"shmstress show: {path}: the replay recorded nothing to draw", 3
    title = f"{swimlane_title(result)} (found in {bundle.mode} mode)"
    lanes = swimlane(analysis, recording.steps, result.workers, title, keep_all)
    if bundle.names:  # the outcome names objects as the model does (``failure_in_names``)
        lanes = replace(lanes, violation=rename_text(lanes.violation, bundle.names))
    return lanes, "", 0


def _cmd_show(args: argparse.Namespace) -> int:
    path = Path(args.bundle)
    if args.svg:
        require_writable(Path(args.svg), "the swimlane")
    lanes, why, code = bundle_swimlane(path, code_allowance(args), keep_all=args.all)
    if lanes is None:
        print(why, file=sys.stderr)
        return code
    width = args.width or shutil.get_terminal_size((120, 24)).columns
    lines = [render_text(lanes, width)]
    if args.svg:  # written before any output: a closed pipe must not cost the file
        written = write_text_atomically(Path(args.svg), render_svg(lanes), "the swimlane")
        lines.append(f"swimlane: {written}\n")
    try:
        sys.stdout.write("".join(lines))
        sys.stdout.flush()
    except BrokenPipeError:  # `shmstress show ... | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _width(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of columns") from None
    if value < 40:
        raise argparse.ArgumentTypeError(f"at least 40 columns, got {value}")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(
        sub, "show",
        description="Replay a repro bundle and draw its failure as a swimlane (Lincheck's "
        "interleaving table): a header of workers, each step in its worker's column, the "
        "steps the explanation tells marked *, the violation at the bottom. A long "
        "schedule shows the window the explanation is about, with long stretches of other "
        "steps folded. --svg also writes the picture as SVG (hover a step for its fields). "
        + BUNDLE_CODE_NOTE,
        epilog=EXAMPLES + "\n" + EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("bundle", metavar="BUNDLE", help="a repro bundle (.json)")
    parser.add_argument("--svg", metavar="FILE", help="also write the swimlane as SVG to FILE")
    parser.add_argument("--all", action="store_true",
                        help="fold nothing: every step of the window gets its row")
    parser.add_argument("--width", type=_width, metavar="COLUMNS",
                        help="width of the table (default: the terminal's, else 120)")
    add_code_options(parser)
    parser.set_defaults(handler=_cmd_show)
