"""Names in a shared directory (/dev/shm) that another user cannot take first.

A name made only of a pid and a start time is public (/proc shows both while a run
starts): a watcher can create it before we do, so that our ``O_EXCL`` create fails and the
run with it, or plant a symlink there. So each name a run creates in a shared directory
carries a fresh random part, and a create that finds its name taken tries another one.
By chance a 64-bit part is taken once in 2**64 tries; all ``TRIES`` taken means someone
is answering our creates as they happen, and the run is refused in one line, not retried
forever.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TypeVar

from shmstress.core.errors import SegmentError

TOKEN_BYTES = 8
"""Random bytes in each name: 16 hex digits."""
TRIES = 8
_T = TypeVar("_T")


def token() -> str:
    """A fresh random part for one name: ``TOKEN_BYTES`` bytes as hex digits."""
    return secrets.token_hex(TOKEN_BYTES)


def create_unguessable(create: Callable[[str], _T], name: Callable[[str], str], what: str) -> _T:
    """``create(name(token()))`` under a fresh token until one is free (``create`` raises
    FileExistsError for a name taken); SegmentError after ``TRIES`` names all taken."""
    for _ in range(TRIES):
        try:
            return create(name(token()))
        except FileExistsError:
            continue
    raise SegmentError(f"cannot create {what}: {TRIES} fresh random names were all taken "
                       "(another process is creating them first)")
