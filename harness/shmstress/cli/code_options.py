"""``--code`` and ``--allow-changed``: what a bundle may make run (``repro.bundle_code``).

Every command that may replay a bundle (``replay``, ``show``, ``shrink``, ``log``) takes
them, with the same words, so a user learns the rule once.
"""

from __future__ import annotations

import argparse

from shmstress.repro.bundle_code import ALLOW_CHANGED_FLAG, CODE_FLAG, CodeAllowance

BUNDLE_CODE_NOTE = (
    "A bundle is data, but replaying it imports the tracker or scenario it names, and "
    "importing a file runs it: only installed trackers and modules, files under the current "
    f"directory and paths named with {CODE_FLAG} are imported; anything else is refused "
    "with one line and exit 2, before anything runs, as is a file that changed since the "
    "bundle was written.")


def add_code_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "the bundle's code", "A bundle names its tracker or scenario (an installed name, or "
        "a file); replaying it imports that file. Only files under the current directory "
        "(resolved: no '..' or symlink out of it) are imported unasked.")
    group.add_argument(CODE_FLAG, action="append", default=[], metavar="PATH",
                       help="also import the bundle's tracker or scenario from PATH, a file "
                       "or a folder outside the current directory, if the bundle names it "
                       "(repeatable): say so only for code you trust, it runs")
    group.add_argument(ALLOW_CHANGED_FLAG, action="store_true",
                       help="replay even when the tracker or scenario file changed since the "
                       "bundle was written (its sha256 differs), e.g. to see whether a fix "
                       "holds; without it, the command refuses and names the file")


def code_allowance(args: argparse.Namespace) -> CodeAllowance:
    """What ``args`` let a bundle's code be: the current project, and ``--code``'s paths."""
    return CodeAllowance.here(args.code, args.allow_changed)
