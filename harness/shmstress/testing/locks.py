"""Declare a lock shmstress does not know, so that its acquire and release are steps.

    import shmstress.testing
    from somelibrary import InterProcessLock

    shmstress.testing.declare_lock(InterProcessLock, key=lambda lock: lock.path)

Under ``shmstress test`` (and ``shmstress.testing.plain``), from then on every
``InterProcessLock``'s ``acquire`` waits as a ``multiprocessing.Lock``'s does, under the
scheduler's control, and its ``release`` lets the next process in; a process blocked on
it is reported with the lock, its holder and where the holder took it. Anywhere else the
call changes nothing, so it can stay in the scenario's module, or in a ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from shmstress.plain.sync.declared import declare

T = TypeVar("T")


def declare_lock(target: T, acquire: str = "acquire", release: str = "release", *,
                 name: str | None = None, key: Callable[[Any], Hashable] | None = None,
                 reentrant: bool = False) -> T:
    """Declare ``target``, a lock class or one lock object, to shmstress; returns what to use
    in its place (the class itself when it is Python code, changed in place).

    ``acquire`` and ``release`` name its methods (``"lock"``, ``"unlock"``...). An acquire's
    arguments are read as ``threading``'s ``(blocking=True, timeout=-1)`` or as a timeout
    alone (``acquire(timeout=None)``); a timeout of 0 tries, and a try that fails returns
    False. A class of a C extension is subclassed (use the subclass it returns), one that
    cannot be is refused: declare its objects instead (``lock = declare_lock(lock)``,
    which returns a stand-in with the object's other attributes). ``name`` names it in the
    interleaving (default: the variable its creation line assigns). Objects with the same
    ``key(obj)`` are one lock (a lock each process opens by a path or a name of its own);
    by default each object is its own, shared by the processes forked after it was made.
    ``reentrant``: its holder may take it again, as an ``RLock``.

    Declare a class before its objects are made: an object made earlier gets its place in
    the run at its first acquire, and the processes forked before then would not share it.
    Under shmstress the declared object's own acquire and release are not called: the
    scheduler's lock stands in for it, so a run never leaves it taken, and what the object
    does besides locking (a pid written into a lock file) does not happen.
    """
    return declare(target, acquire, release, name=name, key=key, reentrant=reentrant)
