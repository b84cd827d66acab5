"""Copies of the distinct failures' repro bundles, so a report directory stands on its own.

A nightly report is downloaded, mailed or opened from a share, far from the campaign
directory that holds the bundles; with a copy below index.html, the replay command
the page shows works from the page's own directory. Only the bundles of the failures
the page shows are copied: one per distinct failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from shmstress.reports.aggregate import FailureGroup
from shmstress.reports.files import copy_file

BUNDLES_DIR = "bundles"


def target_of(recorded: str) -> Path:
    """Where the copy of a file the results record names goes, relative to the page."""
    path = Path(recorded)
    if path.is_absolute() or ".." in path.parts:
        return Path(BUNDLES_DIR) / path.name
    return path  # already bundles/<campaign>/<name>, as the harness writes it


def copy_bundles(failures: Sequence[FailureGroup], out_dir: Path) -> dict[FailureGroup, str]:
    """Each failure whose bundle exists -> its copy's path relative to ``out_dir``."""
    copied: dict[FailureGroup, str] = {}
    for group in failures:
        rep = group.representative
        source = rep.bundle_file
        if source is None or not source.is_file():
            continue
        assert rep.bundle is not None  # bundle_file is None without it
        relative = target_of(rep.bundle)
        target = out_dir / relative
        if not (target.exists() and target.samefile(source)):
            copy_file(source, target)  # whole or not at all
        copied[group] = relative.as_posix()
    return copied
