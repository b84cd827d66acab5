"""Argument types and the parser class every shmstress subcommand shares.

Every command line that makes no sense is refused here or by the command's own checks,
with one line and exit 2, before anything starts: an empty item in a list, a number
that is not finite, the same role or parameter named twice, a flag that does not apply.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from shmstress.controlled.strategies import DEFAULT, KNOB_FLAGS, StrategySpec, spec_of
from shmstress.core.config import OUT_ENV, SHM_DIR_ENV
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import exit_code_table

_GIVEN = "_shmstress_given"


class OneLineErrors(argparse.ArgumentParser):
    """argparse prints the whole usage block before a mistake; we print the mistake alone."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def key_value(text: str) -> tuple[str, int]:
    """argparse type of ``NAME=INTEGER`` options (--param, --workers)."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=INTEGER, got {text!r}")
    try:
        return name, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name}: {value!r} is not an integer") from None


def split_list(text: str) -> list[str]:
    """``a,b``: the items of a comma-separated list; an empty item (``a,,b``, ``a,``) is a
    mistake, never silently dropped."""
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"empty item in the list {text!r}")
    return parts


def noise_kinds(text: str) -> tuple[str, ...]:
    return tuple(split_list(text))


def no_repeats(option: str, pairs: Iterable[tuple[str, object]]) -> dict[str, Any]:
    """``--workers ROLE=2 --workers ROLE=3``: refused, not "the last one wins"."""
    seen: dict[str, Any] = {}
    for name, value in pairs:
        if name in seen:
            raise ConfigError(f"{option} names {name} twice ({name}={seen[name]} and "
                              f"{name}={value}); give it once")
        seen[name] = value
    return seen


def strategy_from_args(args: argparse.Namespace) -> StrategySpec:
    """The strategy ``--strategy`` names (default: the portfolio) with the parameters the
    command line gave it (``--depth``, ``--spin``, ``--bound``; None: not given), checked by
    its spec: one line for a parameter it does not take or a value out of range."""
    return spec_of(args.strategy or DEFAULT,
                   **{flag: getattr(args, flag, None) for flag in KNOB_FLAGS})


def track_given(parser: argparse.ArgumentParser) -> None:
    """Make ``given(args)`` list the options the command line set (not their defaults)."""
    made: dict[type[argparse.Action], type[argparse.Action]] = {}
    for action in parser._actions:
        if action.option_strings and not isinstance(action, argparse._HelpAction):
            cls = type(action)
            if cls not in made:
                made[cls] = _recording(cls)
            action.__class__ = made[cls]


def _recording(cls: type[argparse.Action]) -> type[argparse.Action]:
    """``cls`` with a ``__call__`` that notes the option as given."""

    def __call__(  # noqa: N807 - the method of the class built below
        self: argparse.Action, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
        values: str | Sequence[Any] | None, option_string: str | None = None,
    ) -> None:
        given = set(getattr(namespace, _GIVEN, ()))
        given.add(max(self.option_strings, key=len))  # --output, however it was typed
        setattr(namespace, _GIVEN, given)
        cls.__call__(self, parser, namespace, values, option_string)

    return type(cls.__name__, (cls,), {"__call__": __call__})


def given(args: argparse.Namespace) -> set[str]:
    """The options the command line set, each by its long name (``--depth``)."""
    return set(getattr(args, _GIVEN, ()))


def refuse_unless(args: argparse.Namespace, options: Iterable[str], why: str) -> None:
    """One line naming the options given that do not apply (``why`` says when they do)."""
    wrong = sorted(given(args) & set(options))
    if wrong:
        verb = "applies" if len(wrong) == 1 else "apply"
        raise ConfigError(f"{', '.join(wrong)} {verb} only {why}")


ENVIRONMENT = f"""environment:
  {OUT_ENV:<18} where failing runs write bundles and logs (default shmstress-out/)
  {SHM_DIR_ENV:<18} where runs keep their shared-memory segments (default /dev/shm); on a
  {"":<18} shared host, a tmpfs or directory of the job's own user, mode 0700 (see
  {"":<18} docs/explanation/faults.md, "Segments and the sweep")"""
EPILOG = f"{exit_code_table()}\n\n{ENVIRONMENT}"


def with_examples(*examples: str) -> dict[str, Any]:
    """``add_parser`` keywords for a subcommand's help: its examples (``command  # why``),
    then the exit codes, laid out as written."""
    lines = "\n".join(f"  {example}" for example in examples)
    return {"epilog": f"examples:\n{lines}\n\n{EPILOG}", "formatter_class": HelpFormatter}


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, except that the epilog (examples, exit codes) stays as written: the
    description is still wrapped to the terminal."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(("examples:", "exit codes:")):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)
