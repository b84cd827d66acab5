"""Put the instrumented primitives where ``multiprocessing`` code looks them up.

Only in the host process (and so in every execution forked from it), before
the scenario's module is imported: the module attributes of
``multiprocessing.synchronize``, ``sharedctypes``, ``queues``, ``connection``
(``Pipe``, ``wait``), ``pool``, ``managers``, ``concurrent.futures`` and the ``Popen`` modules,
which every way in (``multiprocessing.Lock``, a context's ``Lock``, ``from
multiprocessing.synchronize import Lock`` at import) resolves through. The
classes themselves are not touched, so objects made before (the harness's own
semaphores) keep working as they are. ``time.sleep`` and ``os.sched_yield``
become points at which the process says it waits for the others.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import mmap
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, SupportsIndex

from shmstress.plain.runtime import PlainRuntime
from shmstress.plain.sync import posix_semaphore
from shmstress.plain.sync.atomic import patch_atomics
from shmstress.plain.sync.barrier import Barrier
from shmstress.plain.sync.condition import Condition
from shmstress.plain.sync.connection import Connection
from shmstress.plain.sync.event import Event
from shmstress.plain.sync.executor import ProcessPoolExecutor
from shmstress.plain.sync.file_lock import FileLocks
from shmstress.plain.sync.lock import Lock, RLock
from shmstress.plain.sync.mailbox import Mailbox
from shmstress.plain.sync.manager import manager_classes
from shmstress.plain.sync.mmap import SharedMapping
from shmstress.plain.sync.pool import Pool
from shmstress.plain.sync.process import PlainPopen
from shmstress.plain.sync.queue import JoinableQueue, Queue, SimpleQueue
from shmstress.plain.sync.semaphore import BoundedSemaphore, Semaphore
from shmstress.plain.sync.shared_memory import ShareableList, SharedMemory
from shmstress.plain.sync.value import SharedData

PLUMBING = True

_POPEN_MODULES = ("multiprocessing.popen_fork", "multiprocessing.popen_spawn_posix",
                  "multiprocessing.popen_forkserver")
_HOMES: dict[str, tuple[str, ...]] = {  # where each class goes; the rest: synchronize
    "SharedMemory": ("multiprocessing.shared_memory",),
    "ShareableList": ("multiprocessing.shared_memory",),
    # queues, pipes, pools
    "Connection": (),  # reached through Pipe and wait, below
    "Queue": ("multiprocessing.queues",),
    "JoinableQueue": ("multiprocessing.queues",),
    "SimpleQueue": ("multiprocessing.queues",),
    "Pool": ("multiprocessing.pool",),
    "ProcessPoolExecutor": ("concurrent.futures", "concurrent.futures.process"),
}


@dataclass(frozen=True)
class Bound:
    """The instrumented classes and factories of one runtime."""

    classes: dict[str, type]
    data: SharedData
    popen: type
    managers: dict[str, Any]  # multiprocessing.managers' classes


def bind(runtime: PlainRuntime) -> Bound:
    """Subclasses that carry ``runtime``, so no module global has to."""
    classes: dict[str, type] = {}
    bases: tuple[type, ...] = (Lock, RLock, Semaphore, BoundedSemaphore, Event, Barrier,
                               Condition, SharedMemory, ShareableList)
    for base in bases:
        classes[base.__name__] = type(base.__name__, (base,), {"_runtime": runtime})
    rlock = classes["RLock"]
    classes["Condition"]._new_lock = staticmethod(rlock)  # type: ignore[attr-defined]
    # queues, pipes, pools: the messages live in the board's mailbox
    mailbox = Mailbox(runtime)
    carried: dict[str, Any] = {"_runtime": runtime, "_mailbox": mailbox}
    classes["Connection"] = connection = type("Connection", (Connection,), carried)
    for channelled in (Queue, JoinableQueue, SimpleQueue):
        classes[channelled.__name__] = type(channelled.__name__, (channelled,),
                                            {**carried, "_connection": connection})
    queues = {"_queue": classes["Queue"], "_simple_queue": classes["SimpleQueue"]}
    for pool in (Pool, ProcessPoolExecutor):
        classes[pool.__name__] = type(pool.__name__, (pool,), {"_runtime": runtime, **queues})
    popen = type("Popen", (PlainPopen,), {"_runtime": runtime})
    return Bound(classes, SharedData(runtime, rlock), popen, manager_classes(runtime))


def install(runtime: PlainRuntime) -> Bound:
    bound = bind(runtime)
    for name, cls in bound.classes.items():
        for home in _HOMES.get(name, ("multiprocessing.synchronize",)):
            setattr(importlib.import_module(home), name, cls)
    connection = importlib.import_module("multiprocessing.connection")
    vars(connection)["Pipe"] = bound.classes["Connection"].pipe  # type: ignore[attr-defined]
    vars(connection)["wait"] = bound.classes["Connection"].wait  # type: ignore[attr-defined]
    vars(importlib.import_module("multiprocessing.managers")).update(bound.managers)
    tracker = importlib.import_module("multiprocessing.resource_tracker")
    register, unregister = tracker.register, tracker.unregister

    def untracked(call: Any) -> Any:
        def wrapped(name: str, rtype: str) -> None:
            if rtype != "shared_memory":  # the board's segment table cleans those up
                call(name, rtype)
        return wrapped

    vars(tracker)["register"] = untracked(register)
    vars(tracker)["unregister"] = untracked(unregister)
    sharedctypes = importlib.import_module("multiprocessing.sharedctypes")
    data = bound.data
    factories: dict[str, Any] = {"RawValue": data.raw_value, "RawArray": data.raw_array,
                                 "Value": data.value, "Array": data.array}
    for name, factory in factories.items():
        setattr(sharedctypes, name, factory)
    for module in _POPEN_MODULES:
        try:
            vars(importlib.import_module(module))["Popen"] = bound.popen
        except ImportError:  # popen_forkserver needs fd passing; not everywhere
            continue
    process = importlib.import_module("multiprocessing.process")
    vars(process)["_cleanup"] = _cleanup_in_start_order
    _lighten_bootstrap()

    def sleep(seconds: float | SupportsIndex) -> None:
        runtime.pause("sleep") if runtime.scheduled else real_sleep(seconds)

    def sched_yield() -> None:
        runtime.pause("yield") if runtime.scheduled else None

    real_sleep = time.sleep
    time.sleep = sleep
    os.sched_yield = sched_yield
    _watch_threads(runtime)
    _install_foreign(runtime)
    return bound


def _watch_threads(runtime: PlainRuntime) -> None:
    """A thread started in an execution runs beside the scheduler, whatever it does: the
    self-check names it (and where it was started); it still runs, as it would."""
    start = threading.Thread.start

    def watched_start(self: threading.Thread) -> None:
        if runtime.scheduled:
            runtime.uncontrolled_thread(self.name)
        start(self)

    threading.Thread.start = watched_start  # type: ignore[method-assign]



# -- mmap, file locks, foreign locks ------------------------------------------------------------
def _install_foreign(runtime: PlainRuntime) -> None:
    """``mmap.mmap`` and ``fcntl``'s file locks at once; the packages of foreign locks
    (``posix_ipc``'s named semaphores, ``atomics``' compare-and-swap) when the scenario
    imports them, so a run that does not use them neither imports them nor needs them."""
    vars(mmap)["mmap"] = type("mmap", (SharedMapping,), {"_runtime": runtime})
    FileLocks(runtime).install()

    def named_semaphores(module: ModuleType) -> None:
        semaphore = posix_semaphore.bind(runtime, module)
        vars(module).update(Semaphore=semaphore, unlink_semaphore=semaphore.unlink_name)

    sys.meta_path.insert(0, _PatchOnImport({
        "posix_ipc": named_semaphores,
        "atomics": lambda module: patch_atomics(runtime, module),
    }))


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patch a module right after it is first imported (at once if it is already)."""

    def __init__(self, patches: dict[str, Callable[[ModuleType], None]]) -> None:
        self._patches = dict(patches)
        for name in list(self._patches):
            if name in sys.modules:
                self._patches.pop(name)(sys.modules[name])

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        patch = self._patches.pop(fullname, None)
        if patch is None:
            return None
        spec = importlib.util.find_spec(fullname)  # by the other finders: it is popped here
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_and_patch(module: ModuleType) -> None:
            run(module)
            patch(module)

        loader.exec_module = exec_and_patch  # type: ignore[method-assign]
        return spec


def _lighten_bootstrap() -> None:
    """Spare every started process two things its ``Process._bootstrap`` does that change
    nothing here, and that cost about half a millisecond each (a fifth of a process's
    start; plain code starts one per step or two).

    * It runs every after-fork hook registered, among them one per semaphore the harness
      made before the scenario was imported (the board's grants, one a slot): they only
      zero the semaphore's owner count, which a semaphore (unlike an ``RLock``) never
      reads. Hooks registered from here on (the scenario's own) still run.
    * It closes ``sys.stdin`` and opens ``/dev/null`` in its place: the host's stdin is
      ``/dev/null`` already (its own start did that), so the one inherited is kept.
    """
    util = importlib.import_module("multiprocessing.util")
    synchronize = importlib.import_module("multiprocessing.synchronize")
    registry = vars(util)["_afterfork_registry"]
    semaphore_kind = vars(synchronize)["SEMAPHORE"]
    for key, obj in list(registry.items()):
        if (isinstance(obj, synchronize.SemLock)
                and getattr(obj, "_semlock").kind == semaphore_kind):  # noqa: B009 - private
            del registry[key]
    host_stdin = sys.stdin
    if host_stdin is None or not _is_devnull(host_stdin):
        return
    close_stdin = vars(util)["_close_stdin"]

    def keep_devnull_stdin() -> None:
        if sys.stdin is not host_stdin or host_stdin.closed:
            close_stdin()

    vars(util)["_close_stdin"] = keep_devnull_stdin


def _is_devnull(stream: Any) -> bool:
    try:
        return os.path.samestat(os.fstat(stream.fileno()), os.stat(os.devnull))
    except (OSError, ValueError, AttributeError):
        return False


def _cleanup_in_start_order() -> None:
    """``multiprocessing.process._cleanup``, polling the children in the order they were
    started. Its own order is a ``set``'s, which follows memory addresses: each poll is a
    step, so the same seed took other steps in another session (SCTBench's three-process
    ports did not replay).

    ``Process.start`` calls it only to forget finished children, which nothing the code
    can see depends on but ``active_children()``, which sweeps again itself; there it
    polls nothing. As steps, those polls would order every start against the exit of
    every child started before it: schedules that differ only there are told apart by
    nothing, yet a search must run each (DPOR on ``reorder_5_bad`` spent its budget on
    them)."""
    if sys._getframe(1).f_code.co_name == "start":
        return
    process = importlib.import_module("multiprocessing.process")
    children = vars(process)["_children"]
    for child in sorted(children, key=lambda p: p._identity):
        popen = child._popen
        if popen is not None and popen.poll() is not None:
            children.discard(child)
