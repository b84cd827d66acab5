"""Which function is the scenario: ``path/to/file.py:name`` or ``package.module:name``."""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shmstress.core.errors import ScenarioError

_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")

SCENARIO_ATTRIBUTE = "__shmstress_scenario__"
"""Set on a decorated test (``testing.plain.concurrency_test``): the function it runs."""


@dataclass(frozen=True)
class ScenarioRef:
    """A scenario by where it lives; ``path`` is absolute when it names a file."""

    module: str  # a file path ending in .py, or a dotted module name
    function: str

    @classmethod
    def parse(cls, text: str) -> ScenarioRef:
        where, colon, function = text.rpartition(":")
        if not colon or not where or not function.replace(".", "_").isidentifier():
            raise ScenarioError(f"a scenario is FILE.py:FUNCTION or MODULE:FUNCTION, got {text!r}")
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise ScenarioError(f"scenario file {where} does not exist")
            where = str(path.resolve())
        else:
            importable_here()
        return cls(where, function)

    def describe(self) -> str:
        return f"{self.module}:{self.function}"

    @property
    def file(self) -> Path | None:
        """The file ``load`` imports; None for a module found on ``sys.path``."""
        return Path(self.module) if self.module.endswith(".py") else None

    def project(self) -> str | None:
        """The folder of the project the scenario belongs to, found without importing
        anything: from the scenario's file (or its top-level package's folder) up to the
        first folder that holds ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git``;
        the file's own folder when there is none. Its code is traced by default."""
        if self.module.endswith(".py"):
            start = Path(self.module).parent
        else:
            found = importlib.machinery.PathFinder.find_spec(self.module.split(".")[0])
            if found is None or found.origin is None:
                return None
            start = Path(found.origin).resolve().parent
        for folder in (start, *start.parents):
            if any((folder / marker).exists() for marker in _PROJECT_MARKERS):
                return str(folder)
            if folder.name in ("site-packages", "dist-packages"):
                break  # an installed package: its own folder, not the environment's
        return str(start)

    def load(self) -> Callable[[], object]:
        """Import the module (in the host, under the instrumented primitives) and find the
        function; every problem is a one-line ``ScenarioError``."""
        module = self._import()
        found: object = module
        for part in self.function.split("."):
            found = getattr(found, part, None)
            if found is None:
                raise ScenarioError(f"{self.module} defines no {self.function!r}")
        found = getattr(found, SCENARIO_ATTRIBUTE, found)  # the scenario, not its test
        if not callable(found):
            raise ScenarioError(f"{self.describe()} is not a function")
        return found

    def _import(self) -> object:
        path = self.file
        if path is None:
            try:
                return importlib.import_module(self.module)
            except Exception as exc:
                raise ScenarioError(f"importing {self.module} failed: {_one_line(exc)}") from exc
        folder = str(path.parent)
        if folder not in sys.path:  # its sibling modules import as they would next to it
            sys.path.insert(0, folder)
        digest = hashlib.sha256(self.module.encode()).hexdigest()[:12]
        name = f"shmstress_scenario_{path.stem}_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ScenarioError(f"cannot import {path} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except SystemExit as exc:
            raise ScenarioError(f"importing {path} failed: it called sys.exit({exc.code!r})") \
                from None
        except Exception as exc:
            raise ScenarioError(f"importing {path} failed: {_one_line(exc)}") from exc
        return module


def importable_here() -> None:
    """Put the current directory first on ``sys.path``, as ``python -m`` and pytest do, so
    that ``bank:deposits`` run next to ``bank.py`` finds it: the ``shmstress`` script's own
    ``sys.path[0]`` is the folder of the script, not the user's. The execution processes
    take this ``sys.path`` (``plain.host``), and a replay parses the name the same way."""
    here = str(Path.cwd())
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def traced_code(scenario: ScenarioRef, named: tuple[str, ...], project: bool = True
                ) -> tuple[str, ...]:
    """What a run traces: the code ``named`` (``--trace``) and, unless ``project`` is off
    (``--no-auto-trace``), the scenario's own project, so that shared memory its code
    reads and writes by subscript (a numpy array, a segment's buffer, an mmap) is made of
    points without a flag. Resolved here, so a bundle keeps it and a replay traces the
    same code."""
    folder = scenario.project() if project else None
    return named if folder is None or folder in named else (*named, folder)
