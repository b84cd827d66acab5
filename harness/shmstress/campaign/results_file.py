"""Appending trial records to ``results.jsonl`` so that a killed campaign loses one trial at most.

Each record is one ``write(2)`` on an ``O_APPEND`` descriptor followed by ``fsync``:
there is no user-space buffer to lose and a signal cannot split a line. Processes
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


@dataclass(frozen=True)
class Repair:
    """A partial last line cut off by a kill, removed before appending after it."""

    path: Path
    removed_bytes: int


class ResultsFile:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def append(self, record: Mapping[str, object]) -> None:
        data = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(f"cannot append to {self.path}: {exc.strerror}") from exc
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)

    def repair_tail(self) -> Repair | None:
        """Drop a partial last line, so the next record does not get glued onto it.

        Readers skip a truncated *last* line but reject one in the middle, and after a
        resume the middle is exactly where it would end up.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        if not data or data.endswith(b"\n"):
            return None
        keep = data.rfind(b"\n") + 1
        with open(self.path, "r+b") as handle:
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
        return Repair(self.path, len(data) - keep)

    def records(self) -> list[dict[str, object]]:
        """Every complete record; an unreadable partial last line is left to repair_tail."""
        try:
            lines = self.path.read_bytes().split(b"\n")
        except FileNotFoundError:
            return []
        records: list[dict[str, object]] = []
        for index, raw in enumerate(lines):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except ValueError:
                if index == len(lines) - 1:
                    break
                raise ConfigError(f"{self.path}:{index + 1}: not a JSON record") from None
            if isinstance(value, dict):
                records.append(value)
        return records

