"""What a record or a bundle was made with: shmstress, the code under test, Python, the host.

A nightly trend point or a failure found weeks ago is only worth something if it can say
what it tested: a rate that jumps between two nights is a regression only if the code
under test changed, and a bundle that no longer replays may simply come from another
shmstress. So every results record and every bundle carries this.

The code under test is the git checkout the tracker lives in (its file's directory for a
``file.py:Class`` tracker, else the working directory): ``git rev-parse HEAD`` with a short
timeout, absent when there is no git, no checkout, or git hangs. Nothing is cached
between calls (no global state); a campaign computes it once and passes it on.
"""

from __future__ import annotations

import platform
import socket
import subprocess
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

GIT_TIMEOUT_S = 2.0
"""A git that does not answer within this (a network mount, a lock) is treated as absent."""


def package_version() -> str:
    """The installed shmstress version; ``unknown`` when run from a tree never installed."""
    try:
        return version("shmstress")
    except PackageNotFoundError:
        return "unknown"


def code_directory(tracker: str | None) -> Path:
    """Where the code under test lives: a path-loaded tracker's folder, else the cwd."""
    if tracker and ":" in tracker:
        path = Path(tracker.split(":", 1)[0])
        if path.suffix == ".py" and path.parent.is_dir():
            return path.parent
    return Path.cwd()


def git_commit(where: Path, timeout_s: float = GIT_TIMEOUT_S) -> str | None:
    """``git rev-parse HEAD`` of the checkout holding ``where``; None outside one."""
    try:
        done = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--verify", "--quiet", "HEAD"],
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    if done.returncode != 0 or len(commit) not in (40, 64):
        return None
    return commit


def shmstress_code() -> str:
    """This shmstress: its version, and its git commit when it runs from a checkout (what a
    checkpoint says it was saved by: another one resumes, but not exactly)."""
    commit = git_commit(Path(__file__).parent)
    return package_version() + (f" ({commit[:12]})" if commit else "")


@dataclass(frozen=True)
class Provenance:
    """The versions and place a run was made with."""

    shmstress_version: str
    python_version: str
    host: str
    code_commit: str | None = None


def current_provenance(tracker: str | None = None) -> Provenance:
    """This process's provenance, for a run of ``tracker`` (its spec, as ``--tracker``)."""
    return Provenance(
        shmstress_version=package_version(),
        python_version=platform.python_version(),
        host=socket.gethostname(),
        code_commit=git_commit(code_directory(tracker)),
    )
