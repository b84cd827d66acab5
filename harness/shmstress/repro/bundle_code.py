"""The code a bundle makes run, and where it may come from.

A bundle is data: a JSON file anyone can write, downloaded from CI or sent by mail. But
replaying it imports the tracker or scenario it names, and importing a file runs it. So a
command that takes a bundle imports only code the user trusts already:

- an installed name (a built-in tracker, a ``shmstress.trackers`` entry point, a module on
  ``sys.path``): the import system finds it where the user installed it;
- a file inside the current project, the working directory's tree: the file's path and the
  working directory are both resolved first, so neither ``..`` nor a symlink leads out;
- a file, or any file under a folder, that the user names with ``--code PATH``.

Anything else is refused in one line naming the file and the flag, before anything is
imported. A bundle also records the sha256 of the file it names (``code_sha256``); a file
that changed since is refused too, since the replay would not run the code that failed,
unless the user says ``--allow-changed`` (to see whether a fix holds). A file that does
not exist is let through: nothing can run, and loading it says it is missing. Every command
checks through ``require_trusted``: one rule, in one place, for both bundle formats.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from shmstress.core.errors import BundleError, ConfigError
from shmstress.plain.sources import file_digest
from shmstress.plugin.registry import tracker_file

CODE_FLAG = "--code"
ALLOW_CHANGED_FLAG = "--allow-changed"


@dataclass(frozen=True)
class CodeRef:
    """A tracker or scenario as a bundle (or a log) names it, and the file loading it
    imports: None for an installed name, which the import system finds."""

    role: str  # "tracker" or "scenario"
    named: str
    file: Path | None

    def digest(self) -> str | None:
        """The sha256 of its file as it is now; None for an installed name or no file."""
        if self.file is None or not self.file.is_file():
            return None
        return file_digest(self.file)


def tracker_code(spec: str) -> CodeRef:
    """The code a tracker spec (``--tracker``'s, a bundle's) loads."""
    return CodeRef("tracker", spec, tracker_file(spec))


class NamesCode(Protocol):
    """A bundle, of either format: the code it makes run and its file's recorded digest."""

    @property
    def code(self) -> CodeRef: ...

    @property
    def code_sha256(self) -> str | None: ...


@dataclass(frozen=True)
class CodeAllowance:
    """Where the user lets a bundle's code come from: the project (the working directory's
    tree) and the paths named with ``--code``, all resolved; and whether a file that changed
    since the bundle was written may run."""

    project: Path
    named: tuple[Path, ...] = ()
    allow_changed: bool = False

    @classmethod
    def here(cls, named: Sequence[str] = (), allow_changed: bool = False) -> CodeAllowance:
        """This working directory's project, and ``named`` (``--code``'s paths), each of
        which must exist: a mistyped path would allow nothing and say nothing."""
        paths = []
        for text in named:
            path = Path(text)
            if not path.exists():
                raise ConfigError(f"{CODE_FLAG} {text}: no such file or folder")
            paths.append(path.resolve())
        try:
            project = Path.cwd().resolve()
        except OSError as exc:
            raise ConfigError(f"the working directory is gone: {exc.strerror or exc}") from exc
        return cls(project, tuple(paths), allow_changed)

    def allows(self, resolved: Path) -> bool:
        """``resolved`` (a resolved path) lies in the project or under a ``--code`` path."""
        return any(resolved.is_relative_to(root) for root in (self.project, *self.named))


def require_trusted(bundle: NamesCode, allowance: CodeAllowance) -> None:
    """Raise BundleError (exit 2, one line) unless the code ``bundle`` makes run may run:
    see the module's docstring."""
    require_trusted_code(bundle.code, bundle.code_sha256, allowance)


def require_trusted_code(code: CodeRef, recorded: str | None, allowance: CodeAllowance) -> None:
    """``require_trusted`` for code named elsewhere than in a bundle (a log's header names
    its tracker); ``recorded``: the digest its file had, if known."""
    file = code.file
    if file is None or not file.is_file():
        return
    resolved = file.resolve()
    shown = code.named if str(resolved) in code.named else f"{code.named} (that is {resolved})"
    if not allowance.allows(resolved):
        raise BundleError(
            f"refused to import {code.role} {shown}: it lies outside this project "
            f"({allowance.project}), and a bundle runs code only from the project or from a "
            f"path named with {CODE_FLAG}; if you trust that file: {CODE_FLAG} "
            f"{shlex.quote(str(resolved))}")
    if recorded is None or allowance.allow_changed:
        return
    now = file_digest(resolved)
    if now != recorded:
        raise BundleError(
            f"{code.role} file {resolved} changed since the bundle was written (sha256 "
            f"{recorded[:12]}... then, {now[:12]}... now), so the replay would not run the "
            f"code that failed; {ALLOW_CHANGED_FLAG} runs it as it is (to see whether a fix "
            f"holds)")
