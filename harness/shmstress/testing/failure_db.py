"""Failures of earlier runs, kept so the next run of the same test tries them first.

In the spirit of Hypothesis' example database: a stress test whose run fails records
the seed (and the bundle) under its test ID; the next session's run of that test uses
that seed instead of a random one, so last night's flake is the first thing tried in
the morning. A run that passes with the stored seed removes the entry (the fix held,
or the race is too rare for the seed alone; either way the next run is random again).

The database is a directory (``.shmstress/`` in pytest's rootdir by default) of one
small JSON file per test, each replaced whole, so pytest-xdist workers running
different tests never write the same file. It is a cache: deleting it loses nothing
but the head start, and it carries a ``.gitignore`` so it is never committed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from shmstress.core.database import DEFAULT_DIRECTORY, prepare
from shmstress.core.files import ArtifactError, write_text_atomically

__all__ = ["DEFAULT_DIRECTORY", "FailureDatabase", "StoredFailure"]

_FAILURES = "failures"


@dataclass(frozen=True)
class StoredFailure:
    """One failing run of a test: enough to try it again and to say where it came from."""

    seed: int
    bundle: str | None = None
    invariant: str | None = None
    recorded_at: str = ""


@dataclass(frozen=True)
class FailureDatabase:
    """The failures of earlier runs under ``directory``, keyed by test ID and run number
    (a test that calls ``shmstress_run`` twice has two runs)."""

    directory: Path

    def _file(self, test_id: str) -> Path:
        digest = hashlib.sha256(test_id.encode()).hexdigest()[:20]
        return self.directory / _FAILURES / f"{digest}.json"

    def _entries(self, test_id: str) -> dict[str, Any]:
        """The test's stored runs; an unreadable file is a cache miss, never an error."""
        try:
            data = json.loads(self._file(test_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("test") != test_id:
            return {}  # a digest collision or a hand-edited file: not this test's
        runs = data.get("runs")
        return runs if isinstance(runs, dict) else {}

    def fetch(self, test_id: str, run: int) -> StoredFailure | None:
        entry = self._entries(test_id).get(str(run))
        if not isinstance(entry, dict) or not isinstance(entry.get("seed"), int):
            return None
        return StoredFailure(
            seed=entry["seed"],
            bundle=entry.get("bundle") if isinstance(entry.get("bundle"), str) else None,
            invariant=entry.get("invariant") if isinstance(entry.get("invariant"), str)
            else None,
            recorded_at=str(entry.get("recorded_at", "")),
        )

    def save(self, test_id: str, run: int, failure: StoredFailure) -> None:
        entries = self._entries(test_id)
        entries[str(run)] = asdict(failure)
        self._write(test_id, entries)

    def delete(self, test_id: str, run: int) -> None:
        entries = self._entries(test_id)
        if entries.pop(str(run), None) is None:
            return
        if entries:
            self._write(test_id, entries)
        else:
            with contextlib.suppress(OSError):  # gone already, or read-only: a stale hint
                self._file(test_id).unlink()

    def _write(self, test_id: str, entries: dict[str, Any]) -> None:
        """Store, or warn: a cache that cannot be written (a read-only checkout) must never
        turn a test's own verdict into an error."""
        path = self._file(test_id)
        text = json.dumps({"test": test_id, "runs": entries}, indent=1, sort_keys=True)
        try:
            prepare(self.directory)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomically(path, text + "\n", "the failure database")
        except (OSError, ArtifactError) as exc:
            warnings.warn(f"shmstress failure database {self.directory} not updated: {exc}",
                          stacklevel=2)
