"""The code a bundle makes run, and where it may come from.

A bundle is data: a JSON file anyone can write, downloaded from CI or sent by mail. But
replaying it imports the tracker or scenario it names, and importing a file runs it; a
scenario named ``MODULE:FUNCTION`` even calls any function of any module on ``sys.path``
(``pytest:main`` collects the ``conftest.py`` beside the bundle). So a command that takes a
bundle runs only code the user trusts already:

- an installed tracker, by the name its ``shmstress.trackers`` entry point (or shmstress
  itself, for the built-in ones) declares;
- a file of the current project, the working directory's tree: the file's path and the
  working directory are both resolved first, so neither ``..`` nor a symlink leads out;
  the standard library and installed packages are no files of the project, even in a
  virtual environment inside it. A scenario named by module counts by the file the
  import system would find for it (found without importing anything), so a module of the
  standard library or site-packages is no scenario, but those shmstress ships
  (``SHIPPED_SCENARIOS``);
- a file, or any file under a folder, that the user names with ``--code PATH`` (in pytest,
  ``--stress-code PATH``, the project being the rootdir: ``pytest.plugin._project``).

Anything else is refused in one line naming the file and the flag, before anything is
imported. A bundle also records the sha256 of that file (``code_sha256``); a file that
changed since is refused too, since the replay would not run the code that failed, unless
the user says ``--allow-changed`` (to see whether a fix holds). A file that does not exist
(or a module not found) is let through: nothing can run, and loading it says it is missing.
Every command checks through ``require_trusted``: one rule, in one place, for both bundle
formats.
"""

from __future__ import annotations

import importlib.machinery
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from shmstress.core.errors import BundleError, ConfigError
from shmstress.plain.sources import file_digest, is_installed
from shmstress.plugin.registry import tracker_file

CODE_FLAG = "--code"
ALLOW_CHANGED_FLAG = "--allow-changed"
SHIPPED_SCENARIOS = "shmstress.bench.sctbench"
"""The package of scenarios shmstress ships and writes bundles of, by module name (``bench.
sctbench.programs.PACKAGE``, which the layers keep this module from importing)."""


@dataclass(frozen=True)
class CodeRef:
    """A tracker or scenario as a bundle (or a log) names it, and what loading it imports:
    ``file`` when it is named by path, ``module`` when it is a scenario named by module;
    neither for an installed tracker, which its entry point finds."""

    role: str  # "tracker" or "scenario"
    named: str
    file: Path | None = None
    module: str | None = None

    def source(self) -> Path | None:
        """The file loading it runs: its own, or the one the import system finds for its
        module; None for an installed tracker, a module not found, or one with no file."""
        if self.module is not None:
            found = module_spec(self.module)
            return _origin(found) if found is not None else None
        return self.file if self.file is not None and self.file.is_file() else None

    def digest(self) -> str | None:
        """The sha256 of its ``source`` as it is now; None without one."""
        source = self.source()
        return file_digest(source) if source is not None else None


def tracker_code(spec: str) -> CodeRef:
    """The code a tracker spec (``--tracker``'s, a bundle's) loads."""
    return CodeRef("tracker", spec, file=tracker_file(spec))


def module_spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """How ``import name`` would find the module, asking the finders the import system asks
    (``sys.meta_path``), but importing nothing: not even its parent packages, which
    ``importlib.util.find_spec`` imports. None when it is not found."""
    parts = name.split(".")
    locations: Sequence[str] | None = None
    found = None
    for depth in range(1, len(parts) + 1):
        if depth > 1:
            locations = found.submodule_search_locations if found is not None else None
            if locations is None:
                return None  # a module, not a package: it has no submodules
        found = _find(".".join(parts[:depth]), locations)
        if found is None:
            return None
    return found


def _find(fullname: str, locations: Sequence[str] | None) -> importlib.machinery.ModuleSpec | None:
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            found = find(fullname, locations)
        except (ImportError, ValueError):
            continue
        if found is not None:
            return found  # type: ignore[no-any-return]
    return None


def _origin(spec: importlib.machinery.ModuleSpec) -> Path | None:
    """The file a module is loaded from; None for a built-in, frozen or namespace module."""
    return Path(spec.origin) if spec.has_location and spec.origin else None


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
    flag: str = CODE_FLAG  # what names a path to trust, where this allowance comes from

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

    def allows(self, resolved: Path, *also: Path) -> bool:
        """``resolved`` (a resolved path) is a file of the project (not of the standard
        library or an installed package, as in a virtual environment inside the project),
        or lies under a ``--code`` path or one of ``also``."""
        if any(resolved.is_relative_to(root) for root in (*self.named, *also)):
            return True
        return resolved.is_relative_to(self.project) and not is_installed(resolved)


def require_trusted(bundle: NamesCode, allowance: CodeAllowance) -> None:
    """Raise BundleError (exit 2, one line) unless the code ``bundle`` makes run may run:
    see the module's docstring."""
    require_trusted_code(bundle.code, bundle.code_sha256, allowance)


def require_trusted_code(code: CodeRef, recorded: str | None, allowance: CodeAllowance) -> None:
    """``require_trusted`` for code named elsewhere than in a bundle (a log's header names
    its tracker); ``recorded``: the digest its file had, if known."""
    shipped: tuple[Path, ...] = ()
    if code.module is not None:
        found = module_spec(code.module)
        if found is None:
            return
        file = _origin(found)
        if file is None:
            raise BundleError(
                f"refused to run {code.role} {code.named}: module {code.module} is built into "
                f"Python or has no file, so it is no scenario of this project "
                f"({allowance.project})")
        shipped = _shipped_scenarios()
    else:
        file = code.source()
        if file is None:
            return
    resolved = file.resolve()
    shown = code.named if str(resolved) in code.named else f"{code.named} (that is {resolved})"
    if not allowance.allows(resolved, *shipped):
        raise BundleError(
            f"refused to import {code.role} {shown}: it is no file of this project "
            f"({allowance.project}; installed packages are not), and a bundle runs code only "
            f"from the project or from a path named with {allowance.flag}; if you trust that "
            f"file: {allowance.flag} {shlex.quote(str(resolved))}")
    if recorded is None or allowance.allow_changed:
        return
    now = file_digest(resolved)
    if now != recorded:
        raise BundleError(
            f"{code.role} file {resolved} changed since the bundle was written (sha256 "
            f"{recorded[:12]}... then, {now[:12]}... now), so the replay would not run the "
            f"code that failed; {ALLOW_CHANGED_FLAG} runs it as it is (to see whether a fix "
            f"holds)")


def _shipped_scenarios() -> tuple[Path, ...]:
    """The folders of ``SHIPPED_SCENARIOS``, resolved."""
    found = module_spec(SHIPPED_SCENARIOS)
    locations = found.submodule_search_locations if found is not None else None
    return tuple(Path(location).resolve() for location in locations or ())
