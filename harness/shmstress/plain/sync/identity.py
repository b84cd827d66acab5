"""Objects known by something of their own rather than by the Python object: a file lock by
its file, a named semaphore by its name, a declared lock by the key its user gave.

Each process that opens the file or the name has its own handle; the run must see one
object, so its row in the board's object table is found by that key, whoever meets it
first makes it, and the others find it there (one process runs between two points, so
looking up and making are one move). A row made in an execution goes with it, as the
board is restored; one made at import stays for every execution.
"""

from __future__ import annotations

import hashlib
import sys

from shmstress.plain.board import (
    G_OBJECTS,
    NOBODY,
    O_DEVICE,
    O_HOLDERS,
    O_KEY,
    O_KIND,
    O_SITE,
    O_STRIDE,
    Kind,
)
from shmstress.plain.runtime import PlainRuntime

PLUMBING = True


def not_the_scenarios(depth: int) -> bool:
    """Is the caller ``depth`` frames up ``multiprocessing`` or shmstress itself? Their own
    mappings and locks (a heap arena, a segment of the harness) are not the scenario's."""
    module = str(sys._getframe(depth + 1).f_globals.get("__name__", ""))
    return module.startswith(("multiprocessing", "shmstress."))


def key_of(*parts: object) -> int:
    """A nonzero 63-bit key for a name (0 stands for no key: an unlinked name)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1 or 1


def find_row(runtime: PlainRuntime, kinds: tuple[Kind, ...], key: int, device: int = 0) -> int:
    """The row of kind ``kinds`` whose key (and device, for a file) is this, or NOBODY."""
    objects = runtime.board.objects.mv
    for obj in range(int(runtime.board.globals.mv[G_OBJECTS])):
        base = obj * O_STRIDE
        if (objects[base + O_KEY] == key and objects[base + O_KIND] in kinds
                and (not device or objects[base + O_DEVICE] == device)):
            return obj
    return NOBODY


def new_keyed_row(runtime: PlainRuntime, kind: Kind, word: str, key: int,
                  name: str | None = None) -> tuple[int, str]:
    """A new row known by ``key``, named ``name`` or after where the caller met it."""
    obj, label = runtime.new_object(kind, word, name)
    objects = runtime.board.objects.mv
    objects[obj * O_STRIDE + O_KEY] = key
    objects[obj * O_STRIDE + O_HOLDERS] = 0
    objects[obj * O_STRIDE + O_SITE] = 0
    return obj, label


def note_site(runtime: PlainRuntime, obj: int, step: int) -> None:
    """Where the holder of ``obj`` took it: the label of step ``step`` (cheap: two words)."""
    site = int(runtime.board.step_label.mv[step]) + 1 if step >= 0 else 0
    runtime.board.objects.mv[obj * O_STRIDE + O_SITE] = site
