"""A tracker's import must not end the command: ``os._exit`` while it imports is refused.

``sys.exit`` at import raises ``SystemExit``, which the registry turns into a one-line
plugin error, exit 2. ``os._exit`` ends the process on the spot with the tracker's code as
the command's own: a tracker calling ``os._exit(0)`` at import made a run that never
started exit 0, clean, with nothing printed. So while a tracker's module is imported,
``os._exit`` called by this process raises ``ExitAtImport`` instead, which the registry
reports as the configuration error it is; a process the module forks keeps the real
``os._exit``. (A C extension calling ``_exit(2)`` itself is beyond reach: only a parent
process could see that, and shmstress runs as the user's process.)

The patch is the module's attribute, put back as the import ends: there is no other hook
(``os._exit`` raises no audit event).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import NoReturn


class ExitAtImport(BaseException):
    """``os._exit(code)`` called while a tracker was imported; a ``BaseException`` so that
    the module's own ``except Exception`` cannot swallow it."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def exit_refused() -> Iterator[None]:
    """While the block runs, ``os._exit`` in this process raises ``ExitAtImport``."""
    real = os._exit
    importer = os.getpid()

    def refused(status: int) -> NoReturn:
        if os.getpid() != importer:  # a child the import forked ends as it asks
            real(status)
        raise ExitAtImport(status)

    os._exit = refused
    try:
        yield
    finally:
        os._exit = real
