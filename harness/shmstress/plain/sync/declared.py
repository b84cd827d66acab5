"""Any other lock, declared by its user: "this is a lock; acquire is X, release is Y".

A declared lock is a ``Lock`` (or ``RLock``) row of the object table, so it is everything
an instrumented ``multiprocessing.Lock`` is: acquire parks until it is free and is a
step, release is a step, a waiter is "blocked on X held by Y", a cycle of them is a
deadlock, DPOR knows what it touches. The declared object's own acquire and release are
not called under shmstress: the board is the lock, so a run never leaves it taken in the
OS or in another program's memory, and nothing about how it is built (a C extension, a
lock file, a spin over shared memory) has to be understood. Outside shmstress (the
scenario's module imported by pytest, the program run by hand) a declaration changes
nothing.

Which declared objects are one lock: by default the object itself (made before a fork,
it is the same lock in the children, as its row is made when it is); with ``key``, any
two objects with the same key (``key=lambda lock: lock.path`` for a lock each process
opens by a path of its own).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from shmstress.plain.board import G_STEP, NOBODY, O_KEY, O_NAME, O_STRIDE, Kind
from shmstress.plain.sync.base import Primitive
from shmstress.plain.sync.identity import find_row, key_of, note_site
from shmstress.plain.sync.lock import Lock

PLUMBING = True
T = TypeVar("T")
_ROW = "_shm_declared"  # the board's lock, kept on the declared object


@dataclass(frozen=True)
class Declaration:
    """What the user said about a lock, and the instrumented class its rows are of."""

    acquire: str
    release: str
    name: str | None
    key: Callable[[Any], Hashable] | None
    board_lock: type[Lock]

    def row(self) -> Lock:
        """A new board lock, or with a key, the one of that key if the run has it already."""
        lock = self.board_lock.__new__(self.board_lock)
        Primitive.__init__(lock, name=self.name)
        return lock

    def keyed_row(self, obj: Any) -> Lock:
        if self.key is None:
            return self.row()
        runtime = self.board_lock._runtime
        key = key_of("declared", self.key(obj))
        found = find_row(runtime, (Kind.LOCK, Kind.RLOCK), key)
        if found == NOBODY:
            lock = self.row()
            lock._set(O_KEY, key)
            return lock
        lock = self.board_lock.__new__(self.board_lock)
        lock._obj = found
        lock.name = runtime.name_of(runtime.board.obj(found, O_NAME))
        lock._fields = runtime.board.objects.mv
        lock._base = found * O_STRIDE
        return lock


def declare(target: T, acquire: str = "acquire", release: str = "release", *,
            name: str | None = None, key: Callable[[Any], Hashable] | None = None,
            reentrant: bool = False) -> T:
    """See ``shmstress.testing.declare_lock``."""
    board_lock = _board_lock_class(reentrant)
    if board_lock is None:
        return target  # not under shmstress: the lock is what it always was
    declaration = Declaration(acquire, release, name, key, board_lock)
    if isinstance(target, type):
        return _declare_class(target, declaration)  # type: ignore[return-value]
    return _declare_object(target, declaration)  # type: ignore[no-any-return]


def _board_lock_class(reentrant: bool) -> type[Lock] | None:
    """The instrumented class ``multiprocessing`` hands out in this process, if it is one."""
    synchronize = importlib.import_module("multiprocessing.synchronize")
    found = getattr(synchronize, "RLock" if reentrant else "Lock")
    if isinstance(found, type) and issubclass(found, Lock) and hasattr(found, "_runtime"):
        return found
    return None


def _row_of(obj: Any, declaration: Declaration) -> Lock:
    """The board lock of ``obj``, made now if it was made before its class was declared."""
    try:
        fields = vars(obj)
    except TypeError:
        raise TypeError(f"shmstress: a {type(obj).__qualname__} keeps no attributes; declare "
                        "each object instead (declare_lock(obj))") from None
    found = fields.get(_ROW)
    if found is None:
        found = fields[_ROW] = declaration.keyed_row(obj)
    return found  # type: ignore[no-any-return]


def _arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[bool, float | None]:
    """(blocking, timeout) from an acquire's arguments, read as ``threading``'s
    ``(blocking=True, timeout=-1)`` or as a timeout alone (``posix_ipc``'s ``timeout=None``):
    a timeout of 0 or less is a try, a negative one with blocking is none."""
    blocking = True
    for word in ("blocking", "block", "wait"):
        if word in kwargs:
            blocking = bool(kwargs[word])
    timeout = kwargs.get("timeout")
    rest = list(args)
    if rest and isinstance(rest[0], bool):
        blocking = rest.pop(0)
    if rest and timeout is None and isinstance(rest[0], int | float):
        timeout = rest[0]
    if timeout is not None and timeout < 0:
        timeout = None
    elif timeout is not None and timeout == 0:
        blocking, timeout = False, None
    return blocking, timeout


def _acquire(lock: Lock, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    blocking, timeout = _arguments(args, kwargs)
    taken = lock.acquire(blocking, timeout)
    if taken:
        runtime = lock._runtime
        step = int(runtime.board.globals.mv[G_STEP]) - 1 if runtime.scheduled else -1
        note_site(runtime, lock._obj, step)
    return taken


def _methods(declaration: Declaration, row: Callable[[Any], Lock],
             has_context: bool) -> dict[str, Any]:
    """The acquire and release (and ``with``) of a declared lock whose board lock ``row``
    finds."""

    def acquire(self: Any, *args: Any, **kwargs: Any) -> bool:
        return _acquire(row(self), args, kwargs)

    def release(self: Any, *args: Any, **kwargs: Any) -> None:
        row(self).release()

    methods: dict[str, Any] = {declaration.acquire: acquire, declaration.release: release}
    if has_context:
        def enter(self: Any) -> Any:
            _acquire(row(self), (), {})
            return self

        def exit_(self: Any, kind: type[BaseException] | None, value: BaseException | None,
                  traceback: TracebackType | None) -> None:
            row(self).release()

        methods.update(__enter__=enter, __exit__=exit_)
    return methods


def _declare_class(cls: type, declaration: Declaration) -> type:
    """Every instance is a lock, its board row made when it is: in place for a class of
    Python code, else (a C extension's) a subclass, returned, to use in its place."""
    init: Callable[..., None] = getattr(cls, "__init__")  # noqa: B009 - on the class

    @functools.wraps(init)
    def made(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        _row_of(self, declaration)

    methods = _methods(declaration, lambda obj: _row_of(obj, declaration),
                       hasattr(cls, "__enter__"))
    methods["__init__"] = made
    try:
        for attribute, value in methods.items():
            setattr(cls, attribute, value)
        return cls
    except TypeError:
        pass
    try:
        return type(cls.__name__, (cls,), {**methods, "__module__": cls.__module__})
    except TypeError:
        raise TypeError(f"shmstress: {cls.__qualname__} can be neither changed nor "
                        "subclassed; declare its objects instead (declare_lock(obj))") from None


class DeclaredObject:
    """A declared object standing in for one that cannot be changed: its lock methods are
    the board's, every other attribute is the object's."""

    def __init__(self, obj: Any, lock: Lock) -> None:
        object.__setattr__(self, "_shm_object", obj)
        object.__setattr__(self, _ROW, lock)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(object.__getattribute__(self, "_shm_object"), attribute)

    def __repr__(self) -> str:
        return f"<declared lock {vars(self)[_ROW].name!r}: {vars(self)['_shm_object']!r}>"


def _declare_object(obj: Any, declaration: Declaration) -> Any:
    """One object is a lock: its board row is made now, and a stand-in is returned to use
    in its place (an object's own attributes would not do: ``with`` looks its methods up
    on the type, and a C extension's objects take no attributes)."""
    lock = declaration.keyed_row(obj)
    methods = _methods(declaration, lambda stand_in: vars(stand_in)[_ROW],
                       hasattr(type(obj), "__enter__"))
    proxy = type(f"Declared{type(obj).__name__}", (DeclaredObject,), methods)
    return proxy(obj, lock)
