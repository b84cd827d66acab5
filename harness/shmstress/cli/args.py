"""Argument types and the parser class every shmstress subcommand shares."""

from __future__ import annotations

import argparse
from typing import NoReturn

from shmstress.core.exit_reason import exit_code_table


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


def noise_kinds(text: str) -> tuple[str, ...]:
    return tuple(k.strip() for k in text.split(",") if k.strip())




EPILOG = exit_code_table()
