"""A concurrent program in Lincheck's shape, the Hypothesis strategy that draws it, and its
text.

A program is an optional sequential prefix (run by ``main`` before any lane starts), then
lanes of operations, each lane one process, running at the same time, then an optional
suffix (``main`` again, after every lane ended). Lists shrink by dropping elements, so
Hypothesis shrinks a failing program towards fewer lanes and fewer operations.

Its text is a Python literal (``repr``) read back with ``ast.literal_eval``: a bundle and
the scenario file of a failure hold the program as data that never runs code. So arguments
must be literals (numbers, strings, bytes, tuples, lists, dicts, sets, None).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from shmstress.core.errors import ConfigError
from shmstress.testing.lincheck.declaration import Operations


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Any, ...] = ()

    def describe(self) -> str:
        return f"{self.name}({', '.join(repr(arg) for arg in self.args)})"


@dataclass(frozen=True)
class Shape:
    """The largest program drawn: ``lanes`` processes of up to ``ops`` operations each,
    up to ``prefix`` operations before them and ``suffix`` after."""

    lanes: int = 3
    ops: int = 4
    prefix: int = 2
    suffix: int = 2

    def validate(self) -> None:
        if self.lanes < 2:
            raise ConfigError(f"--lanes must be at least 2, got {self.lanes}")
        if self.ops < 1:
            raise ConfigError(f"--ops must be at least 1, got {self.ops}")
        if self.prefix < 0 or self.suffix < 0:
            raise ConfigError("--prefix and --suffix must be at least 0")


@dataclass(frozen=True)
class Program:
    prefix: tuple[Call, ...]
    lanes: tuple[tuple[Call, ...], ...]
    suffix: tuple[Call, ...] = ()

    @property
    def widest(self) -> int:
        """Operations in its longest lane."""
        return max((len(lane) for lane in self.lanes), default=0)

    @property
    def size(self) -> int:
        return len(self.prefix) + sum(len(lane) for lane in self.lanes) + len(self.suffix)

    def describe(self) -> str:
        """One line per part, as a reader compares two programs."""
        lines = []
        if self.prefix:
            lines.append("before: " + "; ".join(call.describe() for call in self.prefix))
        for number, lane in enumerate(self.lanes, 1):
            lines.append(f"lane {number}: " + "; ".join(call.describe() for call in lane))
        if self.suffix:
            lines.append("after: " + "; ".join(call.describe() for call in self.suffix))
        return "\n".join(lines)

    def to_text(self) -> str:
        def calls(part: tuple[Call, ...]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
            return tuple((call.name, call.args) for call in part)

        text = repr((calls(self.prefix), tuple(calls(lane) for lane in self.lanes),
                     calls(self.suffix)))
        try:
            same = program_of(text) == self
        except ConfigError:
            same = False
        if not same:
            raise ConfigError(f"a program's arguments must be Python literals: {text[:200]}")
        return text


def program_of(text: str) -> Program:
    """The program ``to_text`` wrote; anything else is a ``ConfigError``."""
    try:
        prefix, lanes, suffix = ast.literal_eval(text)
        return Program(_calls(prefix), tuple(_calls(lane) for lane in lanes), _calls(suffix))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ConfigError(f"not a lincheck program: {type(exc).__name__}") from None


def _calls(part: Any) -> tuple[Call, ...]:
    calls = []
    for name, args in part:
        if not isinstance(name, str) or not isinstance(args, tuple):
            raise TypeError
        calls.append(Call(name, args))
    return tuple(calls)


def programs(operations: Operations, shape: Shape) -> st.SearchStrategy[Program]:
    """Programs of ``operations`` no larger than ``shape``: at least two lanes, each with at
    least one operation (fewer is no concurrency at all)."""
    call = st.one_of(*(st.tuples(*arguments).map(functools.partial(Call, name))
                       for name, arguments in operations.calls))
    lane = st.lists(call, min_size=1, max_size=shape.ops).map(tuple)
    return st.builds(
        Program,
        st.lists(call, max_size=shape.prefix).map(tuple),
        st.lists(lane, min_size=2, max_size=shape.lanes).map(tuple),
        st.lists(call, max_size=shape.suffix).map(tuple),
    )
