"""Which operations of the object under test a program may call, with what arguments.

Two ways to say it, as Hypothesis users already do: the short form, a mapping from a
method's name to its argument's strategy (``None``: no argument; a tuple: one strategy per
argument), or methods marked ``@operation(...)`` on the class itself, as a
``RuleBasedStateMachine``'s rules are marked ``@rule(...)``. Both become one
``Operations``, the only form the program generator reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from hypothesis.strategies import SearchStrategy

from shmstress.core.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "__shmstress_operation__"

Arguments = SearchStrategy[Any] | tuple[SearchStrategy[Any], ...] | None
"""The short form's value for one method."""


def operation(*arguments: SearchStrategy[Any]) -> Callable[[F], F]:
    """Mark a method as an operation a program may call, one strategy per argument.

        class Counter:
            @operation()
            def increment(self) -> int: ...
            @operation(st.integers(0, 9))
            def add(self, amount: int) -> int: ...
    """

    def mark(method: F) -> F:
        setattr(method, _MARK, tuple(arguments))
        return method

    return mark


@dataclass(frozen=True)
class Operations:
    """Each operation's name and the strategies of its arguments, in a stable order (the
    order Hypothesis draws them in, so a stored example means the same program again)."""

    calls: tuple[tuple[str, tuple[SearchStrategy[Any], ...]], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.calls)


def declared(target: type, operations: Mapping[str, Arguments] | None = None) -> Operations:
    """The operations of ``target``: ``operations`` if given, else its class attribute
    ``operations`` (the short form, in the class), else its marked methods; a subclass (a
    fixed twin) inherits its base's."""
    if operations is None and isinstance(getattr(target, "operations", None), Mapping):
        operations = target.operations  # type: ignore[attr-defined]
    if operations is not None:
        calls = tuple((name, _strategies(arguments)) for name, arguments in operations.items())
    else:
        marked: dict[str, tuple[SearchStrategy[Any], ...]] = {}
        for cls in reversed(target.__mro__):  # a base's first, then what overrides it
            for name, member in vars(cls).items():
                if hasattr(member, _MARK):
                    marked[name] = getattr(member, _MARK)
        calls = tuple(marked.items())
    if not calls:
        raise ConfigError(f"{target.__qualname__} declares no operation: mark its methods "
                          "@operation(...) or give operations={'name': strategy, ...}")
    for name, _ in calls:
        if not callable(getattr(target, name, None)):
            raise ConfigError(f"{target.__qualname__} has no method {name!r} to call")
    return Operations(calls)


def _strategies(arguments: Arguments) -> tuple[SearchStrategy[Any], ...]:
    if arguments is None:
        return ()
    if isinstance(arguments, tuple):
        return arguments
    return (arguments,)
