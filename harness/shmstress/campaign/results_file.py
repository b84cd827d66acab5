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

_LISTED = 10  # corrupt lines named in the warning; the rest are counted


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
        would swallow the next record appended after it.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError(f"cannot read {self.path}: {exc.strerror}") from exc
        if not data or data.endswith(b"\n"):
            return None
        keep = data.rfind(b"\n") + 1
        try:
            with open(self.path, "r+b") as handle:
                handle.truncate(keep)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise ConfigError(f"cannot repair {self.path}: {exc.strerror}") from exc
        return Repair(self.path, len(data) - keep)

    def records(self) -> list[dict[str, object]]:
        """Every complete record. A line that is not one (damaged on disk or in a cache, a
        partial last line) is skipped and noted in ``warnings`` by file and line: one bad
        line must never block a resume, a new campaign or a report."""
        self.warnings, self.skipped = [], 0
        try:
            lines = self.path.read_bytes().split(b"\n")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ConfigError(f"cannot read {self.path}: {exc.strerror}") from exc
        records: list[dict[str, object]] = []
        bad: list[int] = []
        for index, raw in enumerate(lines):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except ValueError:  # invalid JSON or UTF-8
                value = None
            if isinstance(value, dict):
                records.append(value)
            else:
                bad.append(index + 1)
        if bad:
            self.skipped = len(bad)
            shown = ", ".join(f"{self.path}:{line}" for line in bad[:_LISTED])
            more = f" and {len(bad) - _LISTED} more" if len(bad) > _LISTED else ""
            self.warnings.append(
                f"skipped {len(bad)} corrupt line{'s' if len(bad) != 1 else ''} (not a JSON "
                f"record): {shown}{more}; their trials count as not run")
        return records
