"""The scenario file a lincheck session runs, and the one a failure's bundle names.

The plain engine runs a scenario, a function a file defines, imported once per session in
a host that forks each execution. lincheck writes that file: it loads the class under test
(in the host, under the instrumented primitives, as any scenario's imports are) and runs a
program. While searching, the program changes from one Hypothesis example to the next, so
the search's file reads it, per execution, from a file beside it (``read_program``); a
failure's file holds its program as a literal. Both run the same code on the same program,
so the failing execution's steps replay in the failure's file: ``shmstress replay`` of its
bundle brings the failure back with nothing but files a reader can open.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shmstress.core.files import write_text_atomically
from shmstress.testing.lincheck.program import Program, program_of

FUNCTION = "scenario"
"""The function each scenario file defines."""


@dataclass(frozen=True)
class TargetNames:
    """The class under test, its model class and its key function, each as a scenario is
    named (``FILE.py:NAME``, with an absolute path); None: none given."""

    target: str
    model: str | None = None
    key: str | None = None


def read_program(path: str) -> Program:
    return program_of(Path(path).read_text(encoding="utf-8"))


def _header(names: TargetNames, what: str) -> list[str]:
    return [
        f'"""{what} (written by shmstress lincheck)."""',
        "",
        "from shmstress.testing.lincheck.execution import Target, run_program",
        "from shmstress.testing.lincheck.program import program_of",
        "from shmstress.testing.lincheck.scenario_file import read_program",
        "",
        f"TARGET = Target.load({names.target!r}, model={names.model!r}, key={names.key!r})",
    ]


def search_source(names: TargetNames, program_file: Path) -> str:
    """The search's scenario: the program of each execution is read from ``program_file``."""
    return "\n".join([
        *_header(names, f"The lincheck search of {names.target}"),
        "",
        "",
        f"def {FUNCTION}() -> None:",
        f"    run_program(TARGET, read_program({str(program_file)!r}))",
        "",
    ])


def failure_source(names: TargetNames, program: Program) -> str:
    """A failure's scenario: its program, as data."""
    lines = program.describe().splitlines()
    return "\n".join([
        *_header(names, f"A program on which {names.target} is not linearizable:\n\n    "
                 + "\n    ".join(lines) + "\n"),
        f"PROGRAM = program_of({program.to_text()!r})",
        "",
        "",
        f"def {FUNCTION}() -> None:",
        "    run_program(TARGET, PROGRAM)",
        "",
    ])


def write_program(path: Path, program: Program) -> None:
    write_text_atomically(path, program.to_text(), "the lincheck program")
