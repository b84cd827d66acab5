"""Copies of the distinct failures' repro bundles, so a report directory stands on its own.

A nightly report is downloaded, mailed or opened from a share, far from the campaign
directory that holds the bundles; with a copy below index.html, the replay command
the page shows works from the page's own directory. Only the bundles of the failures
the page shows are copied: one per distinct failure.

The results file names the files; it is data, so a copy is made only of a regular file
below its directory (``files.opened_beneath``) and lands below ``bundles/`` in the
report, never over the page or a chart. A file refused is named in a warning line and
on the page, with the reason; a file that is simply gone (history outlives bundles) is
not a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from shmstress.reports.aggregate import FailureGroup
from shmstress.reports.files import (
    RefusedFileError,
    beneath,
    copy_stream,
    opened_beneath,
    same_file,
)
from shmstress.reports.results import Trial

BUNDLES_DIR = "bundles"


@dataclass(frozen=True)
class Published:
    """A file a record names, as the report has it: its copy's path relative to the page,
    or why it was refused (both None: the file is not there)."""

    href: str | None = None
    problem: str | None = None


def target_of(relative: PurePosixPath) -> PurePosixPath:
    """Where the copy of a file below the results directory goes, relative to the page:
    the same path (``bundles/<campaign>/<name>``, as the harness writes it), kept below
    ``bundles/`` whatever the record says."""
    return relative if relative.parts[0] == BUNDLES_DIR else PurePosixPath(BUNDLES_DIR, relative)


Check = Callable[[BinaryIO], str | None]
"""Why the file in the stream must not be published (None: it may); it reads the stream."""


def publish(trial: Trial, recorded: str, what: str, suffix: str, out_dir: Path,
            warnings: list[str], check: Check | None = None) -> Published:
    """Copy the file ``recorded`` (``trial``'s ``what``, named ``*suffix``) below
    ``out_dir``, if it is one a report may publish; a refusal is also appended to
    ``warnings``, naming the record.

    The suffix is the engine's: the page links the copy, and a browser opens a ``.html``
    or ``.svg`` file a record calls a bundle as a page that runs its scripts."""
    try:
        relative = target_of(beneath(recorded))
        if relative.suffix != suffix:
            raise RefusedFileError(f"a {what} is a {suffix} file")
        with opened_beneath(trial.source, recorded) as stream:
            problem = check(stream) if check is not None else None
            if problem is not None:
                raise RefusedFileError(problem)
            stream.seek(0)
            target = out_dir / relative
            if not same_file(stream, target):
                copy_stream(stream, target)  # whole or not at all
    except FileNotFoundError:
        return Published()
    except (RefusedFileError, OSError) as exc:
        reason = str(exc) if isinstance(exc, RefusedFileError) else exc.strerror or str(exc)
        warnings.append(f"{trial.source}:{trial.line}: {what} {recorded!r} not copied into "
                        f"the report: {reason}")
        return Published(problem=reason)
    return Published(href=relative.as_posix())


def copy_bundles(failures: Sequence[FailureGroup], out_dir: Path,
                 warnings: list[str]) -> dict[FailureGroup, Published]:
    """Each failure whose record names a bundle -> its copy below ``out_dir``, or why not."""
    published: dict[FailureGroup, Published] = {}
    for group in failures:
        rep = group.representative
        if rep.bundle:
            published[group] = publish(rep, rep.bundle, "bundle", ".json", out_dir, warnings)
    return published
