"""The source files of the code under test, by digest: a checkpoint resumes only on the code
it searched.

A search saved in a checkpoint and resumed after its code changed would mix the executions
of two programs; one that had ended would answer with the failure of code that has since
been fixed. So the host, once it has imported the scenario, reports a digest of each source
file of the code under test; a checkpoint keeps them, and one whose files differ is refused.

The code under test is the scenario's own file and every module loaded by then from outside
the standard library, the installed distributions (site-packages) and shmstress itself:
those change with an upgrade, which is not an edit of the program, and shmstress's own
changes are said by the command that resumes (the suite's manifest). A module the scenario
imports only while it runs is not known yet, and is not covered.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import sysconfig
from pathlib import Path

import shmstress

Sources = dict[str, str]
"""Source file -> its digest."""

_INSTALLED = frozenset({"site-packages", "dist-packages"})
SHOWN = 3
"""Changed files a refusal names; the others are counted."""


def loaded_sources(scenario_file: str | None) -> Sources:
    """The digests of the code under test's files loaded in this process, and of
    ``scenario_file``'s."""
    ours = [Path(path).resolve() for path in shmstress.__path__]
    files = {getattr(module, "__file__", None) for module in list(sys.modules.values())}
    found: Sources = {}
    for name in sorted(f for f in files if isinstance(f, str) and f.endswith(".py")):
        path = Path(name).resolve()
        if is_installed(path) or any(path.is_relative_to(root) for root in ours):
            continue
        _digest(path, found)
    if scenario_file is not None:
        _digest(Path(scenario_file).resolve(), found)
    return found


def is_installed(resolved: Path) -> bool:
    """``resolved`` (a resolved path) is a file of the standard library or of an installed
    distribution (site-packages), even in a virtual environment inside a project."""
    return bool(_INSTALLED.intersection(resolved.parts)) or resolved.is_relative_to(_stdlib())


@functools.cache
def _stdlib() -> Path:
    """The standard library's folder, resolved: asked once (``sysconfig`` expands its whole
    scheme at every call, 0.7 ms, and a host asks for each of its ~300 modules)."""
    return Path(sysconfig.get_paths()["stdlib"]).resolve()


def _digest(path: Path, into: Sources) -> None:
    """``path``'s digest into ``into``; a file gone since it was imported has none."""
    into[str(path)] = file_digest(path)


def file_digest(path: Path) -> str:
    """The sha256 of ``path``'s bytes in hex; ``unreadable`` when it cannot be read (a file
    gone since it was imported), which no digest of a file equals."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def changed_sources(theirs: Sources, mine: Sources) -> str:
    """The files whose digests differ (changed, new, gone), said in a few words; "" if
    none."""
    changed = sorted(path for path in theirs.keys() | mine.keys()
                     if theirs.get(path) != mine.get(path))
    if not changed:
        return ""
    named = ", ".join(_what(path, theirs, mine) for path in changed[:SHOWN])
    more = len(changed) - SHOWN
    return named + (f" and {more} more" if more > 0 else "")


def _what(path: str, theirs: Sources, mine: Sources) -> str:
    if path not in theirs:
        return f"{path} is new"
    return f"{path} is gone" if path not in mine else f"{path} changed"
