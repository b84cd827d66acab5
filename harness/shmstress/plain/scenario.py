"""Which function is the scenario: ``path/to/file.py:name`` or ``package.module:name``."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shmstress.core.errors import ScenarioError

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
        return cls(where, function)

    def describe(self) -> str:
        return f"{self.module}:{self.function}"

    @property
    def file(self) -> Path | None:
        """The file ``load`` imports; None for a module found on ``sys.path``."""
        return Path(self.module) if self.module.endswith(".py") else None

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


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
