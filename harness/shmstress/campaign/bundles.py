"""Where a trial's repro bundle is kept, and how it reaches the process that writes results.

A trial's bundle is of either format: a tracker's, or a plain-code scenario's (a
``@concurrency_test``); both are kept, carried and named the same way.

A campaign keeps its bundles next to its results, under ``bundles/<campaign>/``,
and results.jsonl names them relative to its own directory: a campaign directory
that is moved, or downloaded from CI, still finds them. Under pytest-xdist a trial
may run on another host, so its bundle travels to the controller with the trial's
report and only the controller writes files, as it does for results.jsonl.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from shmstress.analysis.swimlane import Swimlane
from shmstress.core.config import default_out
from shmstress.core.errors import ConfigError
from shmstress.core.files import write_text_atomically
from shmstress.render.swimlane import render_svg
from shmstress.repro import plain_bundle
from shmstress.repro.bundle import (
    bundle_name,
    from_json,
    path_safe,
    to_json,
    write_bundle,
    write_bundle_into,
)
from shmstress.repro.loading import AnyBundle

BUNDLES_DIR = "bundles"
BUNDLE_PROPERTY = "shmstress_bundle"
"""``user_properties`` key that carries a bundle from an xdist worker to the controller."""
SWIMLANE_PROPERTY = "shmstress_swimlane"
"""...and the one that carries the bundle's swimlane picture with it."""


def _slug(text: str) -> str:
    # ':' and other characters CI artifact stores refuse in a path become '-'.
    return path_safe(text).strip("-")[:80]


def bundle_file_name(bundle: AnyBundle, tag: str = "") -> str:
    """The bundle's own name, plus ``tag`` where runs may share a seed (``--stress-seed``);
    the bundle's id keeps it unique either way. A plain-code bundle's name already says
    its scenario's file and function, its seed and execution: it takes no tag."""
    if isinstance(bundle, plain_bundle.PlainBundle):
        return plain_bundle.bundle_name(bundle)
    return bundle_name(bundle, _slug(tag))


def campaign_bundle_dir(campaign: str) -> Path:
    """``bundles/<campaign>``, relative to the directory of results.jsonl."""
    return Path(BUNDLES_DIR) / _slug(campaign)


def campaign_bundle_path(campaign: str, bundle: AnyBundle, tag: str = "") -> Path:
    return campaign_bundle_dir(campaign) / bundle_file_name(bundle, tag)


def swimlane_path(bundle: Path) -> Path:
    """The failure's swimlane SVG beside its bundle, under the bundle's name: whoever has
    the bundle finds its picture, and the report copies both together."""
    return bundle.with_suffix(".svg")


def write_swimlane(lane: Swimlane | None, target: Path) -> Path | None:
    """Write the SVG of a failure's swimlane ``lane`` to ``target`` whole (None: it has none).

    The engine draws it, not the report: the reports read results only and never the
    engine, so the picture must exist as a file before any report is built."""
    if lane is None:
        return None
    try:
        picture = render_svg(lane)
    except Exception:  # a picture is not worth a nightly campaign's remaining trials
        return None
    return write_text_atomically(target, picture, "the swimlane")


def carried_bundle(bundle: AnyBundle, relative: Path) -> tuple[str, str]:
    """The ``user_properties`` entry that takes ``bundle`` to the controller."""
    document = (plain_bundle.to_json(bundle) if isinstance(bundle, plain_bundle.PlainBundle)
                else to_json(bundle))
    return BUNDLE_PROPERTY, json.dumps({"path": relative.as_posix(), "bundle": document})


def write_carried(value: str, results_dir: Path) -> Path:
    """Controller side of ``carried_bundle``: write it below ``results_dir``, decoded first
    (a carried bundle of neither format is refused, as a bundle read from a file is), and
    never over a file already there."""
    data = json.loads(value)
    relative = _below(Path(str(data["path"])), results_dir)
    document = data["bundle"]
    if plain_bundle.is_plain(document):
        return write_text_atomically(
            results_dir / relative, plain_bundle.render_json(plain_bundle.from_json(document)),
            "the repro bundle", exclusive=True)
    return write_bundle(from_json(document), results_dir / relative)


def write_carried_swimlane(value: str, results_dir: Path) -> Path:
    """Controller side of ``BundleKeeper.keep_swimlane``: write the SVG below ``results_dir``."""
    data = json.loads(value)
    relative = _below(Path(str(data["path"])), results_dir)
    return write_text_atomically(results_dir / relative, str(data["svg"]), "the swimlane")


def _below(relative: Path, results_dir: Path) -> Path:
    if relative.is_absolute() or ".." in relative.parts:
        raise ConfigError(f"a carried file must stay below {results_dir}, got {relative}")
    return relative


def shown_path(path: Path) -> str:
    """A path as a user in this shell would type it: relative when below the working dir."""
    absolute = path.absolute()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


@dataclass(frozen=True)
class BundleKeeper:
    """Where a pytest session keeps the bundles of its stress runs and campaign trials.

    With ``--stress-report DIR`` a bundle travels with its trial record and the
    controller writes it below DIR, next to results.jsonl; otherwise the run writes it
    into ``$SHMSTRESS_OUT`` at once, as ``shmstress run`` does, read at that moment so
    a fixture may set it.
    """

    results_dir: Path | None

    def keep(
        self,
        bundle: AnyBundle,
        campaign: str,
        user_properties: list[tuple[str, object]],
        tag: str = "",
    ) -> tuple[str | None, str]:
        """(the path for results.jsonl, or None without one; the path as a user types it)."""
        if self.results_dir is not None:
            relative = campaign_bundle_path(campaign, bundle, tag)
            user_properties.append(carried_bundle(bundle, relative))
            return relative.as_posix(), shown_path(self.results_dir / relative)
        if isinstance(bundle, plain_bundle.PlainBundle):
            written = plain_bundle.write_plain_bundle(bundle, Path(default_out()))
        else:
            written = write_bundle_into(bundle, Path(default_out()), _slug(tag))
        return None, shown_path(written)

    def keep_swimlane(
        self, lane: Swimlane | None, recorded: str | None,
        user_properties: list[tuple[str, object]],
    ) -> str | None:
        """Send the failure's swimlane ``lane`` along with its bundle (recorded as
        ``recorded``) to the controller; its path for results.jsonl, or None (no picture)."""
        if self.results_dir is None or recorded is None or lane is None:
            return None
        try:
            picture = render_svg(lane)
        except Exception:  # a picture is not worth the trial's record
            return None
        relative = swimlane_path(Path(recorded))
        user_properties.append((SWIMLANE_PROPERTY,
                                json.dumps({"path": relative.as_posix(), "svg": picture})))
        return relative.as_posix()
