"""Learning that persists: aimed noise starts where the last run of the same scenario left off.

TSVD (Li et al., SOSP 2019) keeps its near-miss pairs from one test run to the
next, so the next run delays at the dangerous locations from its first point
instead of discovering them again. Here what a run's aimed noise learnt (its
targets with their yield, delays and productive delays, the violations that followed
their delays, and the pairs that armed them: ``aim.Learnt``) is saved after the run
under the database directory (``.shmstress/learning/``, see
``shmstress.core.database``), one JSON file per configuration, and preloaded into the
next run's tables before the workers fork (``AimTables.preload`` says how: aimed where
the last violations came from, when that is known).

A configuration is its tracker, variant, scenario, worker counts and parameters:
location codes are CRC-32s of labels and a target names the worker whose side it
slows, so another worker count or another variant learns on its own. The file
names its key, so a digest collision, a hand-edited or a foreign file is never
taken for this configuration's. Anything unreadable (corrupt, another format
version, another key) is a note in the run's summary and a fresh start, never an
error; a file that cannot be written is a note too. Two runs of one configuration
at once each replace the file whole (last one wins): a lost run's learning costs a
head start, never a verdict.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shmstress.core.config import RunConfig
from shmstress.core.database import prepare
from shmstress.core.files import ArtifactError, write_text_atomically
from shmstress.free.aim import Learnt

FORMAT = "shmstress-learning"
VERSION = 2  # 2: a target row carries the violations that followed its delays
SUBDIRECTORY = "learning"
REMEMBERED_DELAYS = 256
"""A location's delays are saved scaled down to at most this many, productive ones in
proportion: its yield is kept, but a nightly database does not pile up so much evidence
that a location silenced long ago (or kept up) would take thousands of delays to turn."""


def learning_key(config: RunConfig) -> dict[str, Any]:
    """What a file is saved under: the configuration as far as it shapes the tables."""
    return {
        "tracker": config.tracker,
        "variant": config.variant,
        "scenario": config.scenario,
        "workers": dict(config.counts),
        "params": dict(config.params),
    }


@dataclass(frozen=True)
class Loaded:
    """What ``Learning.load`` found: the learnt tables (empty: a fresh start) and, when a
    file was there but not taken, why."""

    learnt: Learnt
    problem: str | None = None


@dataclass(frozen=True)
class Learning:
    """The learnt tables of every configuration under ``directory`` (the database)."""

    directory: Path

    def file(self, config: RunConfig) -> Path:
        text = json.dumps(learning_key(config), sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:20]
        return self.directory / SUBDIRECTORY / f"{digest}.json"

    def load(self, config: RunConfig) -> Loaded:
        """The tables the last run of ``config`` saved; a missing file is a fresh start, an
        unusable one a fresh start with the reason."""
        path = self.file(config)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return Loaded(Learnt())
        except (OSError, ValueError) as exc:
            return Loaded(Learnt(), f"{path} unreadable ({exc}); started fresh")
        problem = _problem(data, learning_key(config))
        if problem is not None:
            return Loaded(Learnt(), f"{path} {problem}; started fresh")
        try:
            return Loaded(_learnt(data))
        except (TypeError, ValueError) as exc:
            return Loaded(Learnt(), f"{path} malformed ({exc}); started fresh")

    def save(self, config: RunConfig, learnt: Learnt) -> str | None:
        """Replace the configuration's file with ``learnt``; the reason it could not be
        written, or None."""
        path = self.file(config)
        data = {
            "format": FORMAT,
            "version": VERSION,
            "key": learning_key(config),
            "saved_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "targets": [list(_recent(t)) for t in learnt.targets],
            "pairs": [list(p) for p in learnt.pairs],
        }
        try:
            prepare(self.directory)
            write_text_atomically(path, json.dumps(data) + "\n", "the learnt tables")
        except (OSError, ArtifactError) as exc:
            return f"not saved ({exc})"
        return None


def _recent(target: tuple[int, int, int, int, int]) -> tuple[int, int, int, int, int]:
    code, tries, hits, worker, violations = target
    if tries <= REMEMBERED_DELAYS:
        return target
    return (code, REMEMBERED_DELAYS, round(min(hits, tries) * REMEMBERED_DELAYS / tries),
            worker, violations)


def _problem(data: object, key: Mapping[str, Any]) -> str | None:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return "is not a shmstress learning file"
    if data.get("version") != VERSION:
        return f"has format version {data.get('version')!r}, not {VERSION}"
    if data.get("key") != key:
        return "was saved for another configuration"
    return None


def _ints(row: object, n: int) -> list[int]:
    """A row of the file: ``n`` ints in the tables' range (codes, counts, keys < 2^62)."""
    if not isinstance(row, list) or len(row) != n or not all(
            type(v) is int and 0 <= v < 1 << 62 for v in row):
        raise ValueError(f"expected {n} non-negative ints, got {row!r}")
    return row


def _learnt(data: Mapping[str, Any]) -> Learnt:
    targets = data.get("targets", [])
    pairs = data.get("pairs", [])
    if not isinstance(targets, list) or not isinstance(pairs, list):
        raise ValueError("targets and pairs must be lists")
    return Learnt(
        targets=tuple((c, t, h, w, v) for c, t, h, w, v in (_ints(row, 5) for row in targets)),
        pairs=tuple((a, b) for a, b in (_ints(row, 2) for row in pairs)),
    )
