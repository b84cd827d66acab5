"""Appending trial records to ``results.jsonl`` so that a killed campaign loses one trial at most.

Each record is one ``write(2)`` on an ``O_APPEND`` descriptor followed by ``fsync``:
there is no user-space buffer to lose and a signal cannot split a line; a disk that fills
up half-way through the line has the file cut back to where it was. Processes
on one host may append to one file on a local Linux file system without interleaving
their lines; hosts sharing a network disk may not (NFS emulates ``O_APPEND`` on the
client, so their writes can overwrite each other). That is why under pytest-xdist,
on one host or many, the controller alone appends.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shmstress.core.errors import ConfigError
from shmstress.core.files import append_whole
from shmstress.outputs.target import Kind, locate
from shmstress.reports.results import load_results_file


@dataclass(frozen=True)
class Repair:
    """A partial last line cut off by a kill, removed before appending after it."""

    path: Path
    removed_bytes: int


class ResultsFile:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.warnings: list[str] = []  # what the last ``records()`` skipped, file:line each
        self.skipped = 0

    def append(self, record: Mapping[str, object]) -> None:
        """One line, one ``write`` and ``fsync``; a full disk leaves the file as it was."""
        data = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        append_whole(self.path, data, "the results file")

    def repair_tail(self) -> Repair | None:
        """Drop a partial last line, so the next record does not get glued onto it.

        Readers skip a corrupt line with a warning wherever it is, but a partial last line
        would swallow the next record appended after it. Only a regular file is cut (the
        one a link of ours leads to, never through another user's: ``outputs.target``).
        """
        try:
            target = locate(self.path)
            if target.kind is not Kind.FILE:
                return None  # nothing yet, or a device: nothing to cut
            fd = os.open(target.path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise ConfigError(f"cannot read {self.path}: {exc.strerror}") from exc
        with os.fdopen(fd, "r+b") as handle:
            try:
                data = handle.read()
                if not data or data.endswith(b"\n"):
                    return None
                keep = data.rfind(b"\n") + 1
                handle.truncate(keep)
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as exc:
                raise ConfigError(f"cannot repair {self.path}: {exc.strerror}") from exc
        return Repair(self.path, len(data) - keep)

    def records(self) -> list[dict[str, object]]:
        """Every trial record, as ``shmstress report`` reads them (``load_results_file``):
        a line that is not one (damaged on disk or in a cache, a partial last line, a record
        that does not fit the schema) is skipped and noted in ``warnings`` in the report's
        own words, by file and line; its trial counts as not run. One bad line must never
        block a resume, a new campaign or a report, nor count as a trial done."""
        self.warnings, self.skipped = [], 0
        try:
            loaded = load_results_file(self.path)
            lines = self.path.read_bytes().split(b"\n")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ConfigError(f"cannot read {self.path}: {exc.strerror}") from exc
        self.warnings, self.skipped = list(loaded.warnings), loaded.skipped_lines
        # the lines the reader took, as they are: the campaign compares keys as written
        return [json.loads(lines[trial.line - 1]) for trial in loaded.trials]
