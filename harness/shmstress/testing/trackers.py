"""A tracker as a test names it: an installed name, a ``path/to/file.py:Class``, or the class.

Tests hold classes and run from wherever pytest was started, but a bundle, a record and
a rerun line need a spec that loads the same tracker again from anywhere. So a class
becomes its spec (``registry.spec_of``), and a relative path is taken relative to the
``root`` given (pytest's rootdir), never to the current directory, which changes with
how pytest was invoked.
"""

from __future__ import annotations

from pathlib import Path

from shmstress.plugin.registry import spec_of
from shmstress.plugin.tracker import Tracker

TrackerRef = str | type[Tracker]
"""What every test helper accepts as its ``tracker``."""


def tracker_spec(tracker: TrackerRef, root: Path | None = None) -> str:
    """The registry spec for ``tracker``; relative file paths resolved against ``root``."""
    if not isinstance(tracker, str):
        return spec_of(tracker)
    path_text, colon, name = tracker.partition(":")
    if root is None or not path_text.endswith(".py"):
        return tracker
    path = Path(path_text).expanduser()
    if path.is_absolute():
        return tracker
    return f"{root / path}{colon}{name}"
