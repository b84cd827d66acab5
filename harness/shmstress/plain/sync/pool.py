"""``multiprocessing.Pool`` with its three threads folded into the caller's steps.

This is the real ``Pool`` (its ``apply``, ``map``, ``imap``, ``starmap`` and their async
forms, results, ``close``, ``terminate``, the context manager), less its threads
(``sync/fold.py`` says why and what that changes):

* the task handler's loop is the ``put`` of the pool's task hand-over: ``apply_async``
  and the others put each task (each chunk) into the workers' queue at once, one step
  each, in order;
* the result handler's loop is ``_drain``: one step that waits for a result or for a
  worker's exit; a result goes onto its job (callbacks run there), an exit gets the
  worker replaced, as the worker handler does. Waiting on a result drains (its event or
  condition is ``Folded``); ``join`` drains until every job is done, then puts a
  sentinel for each worker and joins them;
* ``terminate`` (and the context manager's exit, and the end of the process that made
  the pool) kills the workers as ``Process.terminate`` does, and joins them.

The workers are ordinary controlled processes running the real ``worker`` loop,
started by the real ``_repopulate_pool``; they are called ``pool_worker #n``, their
queues ``NAME.tasks`` and ``NAME.results`` after the pool's variable. A pool made
without a size has ``DEFAULT_WORKERS``, not ``os.cpu_count()``: the schedule must not
depend on the machine, or a bundle would not replay on another one.
"""

from __future__ import annotations

import sys
from multiprocessing import get_context, util
from multiprocessing import pool as mp_pool
from multiprocessing.reduction import ForkingPickler
from typing import Any, ClassVar

from shmstress.plain.runtime import PlainRuntime
from shmstress.plain.sync.connection import entry_ready, wait_for_any
from shmstress.plain.sync.fold import Folded
from shmstress.plain.sync.naming import made_name
from shmstress.plain.sync.queue import SimpleQueue

PLUMBING = True
DEFAULT_WORKERS = 2
_RUN, _CLOSE, _TERMINATE = mp_pool.RUN, mp_pool.CLOSE, mp_pool.TERMINATE
_WORKER: Any = getattr(mp_pool, "worker")  # noqa: B009 - the real worker loop, not in the stubs


def pool_worker(*args: Any) -> None:
    """The real pool worker loop, under a name that says what the process is."""
    _WORKER(*args)


class Pool(mp_pool.Pool):
    _runtime: ClassVar[PlainRuntime]
    _simple_queue: ClassVar[type[SimpleQueue]]

    @staticmethod
    def Process(ctx: Any, *args: Any, **kwds: Any) -> Any:  # noqa: N802 - the real name
        if kwds.get("target") is _WORKER:
            kwds["target"] = pool_worker
        return ctx.Process(*args, **kwds)

    def __init__(self, processes: int | None = None, initializer: Any = None,
                 initargs: tuple[Any, ...] = (), maxtasksperchild: int | None = None,
                 context: Any = None) -> None:
        self._pool: list[Any] = []
        self._state = mp_pool.INIT
        self._ctx = context or get_context()
        self._name = made_name(sys._getframe(1), "pool")
        self._setup_queues()
        self._taskqueue = _Handover(self)
        self._change_notifier = _Nobody()
        self._cache = _FoldedCache(self)
        self._maxtasksperchild = maxtasksperchild
        self._initializer = initializer
        self._initargs = initargs
        processes = DEFAULT_WORKERS if processes is None else processes
        if processes < 1:
            raise ValueError("Number of processes must be at least 1")
        if maxtasksperchild is not None and (not isinstance(maxtasksperchild, int)
                                             or maxtasksperchild <= 0):
            raise ValueError("maxtasksperchild must be a positive int or None")
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        self._processes = processes
        try:
            self._repopulate_pool()  # type: ignore[attr-defined]
        except Exception:
            for worker in self._pool:
                if worker.exitcode is None:
                    worker.terminate()
            for worker in self._pool:
                worker.join()
            raise
        self._terminate = util.Finalize(self, _terminate_workers, args=(self._pool,),
                                        exitpriority=15)
        self._state = _RUN

    def _setup_queues(self) -> None:
        self._inqueue = self._simple_queue(name=f"{self._name}.tasks", piped=False)
        self._outqueue = self._simple_queue(name=f"{self._name}.results", piped=False)
        self._quick_put = self._inqueue.put
        self._quick_get = self._outqueue.get

    def close(self) -> None:
        if self._state == _RUN:
            self._state = _CLOSE

    def join(self) -> None:
        if self._state == _RUN:
            raise ValueError("Pool is still running")
        if self._state not in (_CLOSE, _TERMINATE):
            raise ValueError("In unknown state")
        if self._state == _CLOSE:
            while self._cache:  # the result handler's last loop
                self._drain(None)
            for _ in self._pool:  # the task handler's last act
                self._inqueue.put(None)
        for worker in self._pool:
            worker.join()

    def _drain(self, timeout: float | None) -> bool:
        """One step of the result and worker handlers: wait for a result or a worker's
        exit (``timeout``: how long); False if there was neither in time."""
        runtime = self._runtime
        outqueue = self._outqueue
        exits = [-1 - worker._popen._slot for worker in self._pool
                 if worker._popen is not None and worker._popen.returncode is None]
        wait_for_any(runtime, f"get from {outqueue.name}", [outqueue._row, *exits], timeout)
        data = outqueue._reader._take_now()
        if data is not None:
            job, index, result = ForkingPickler.loads(data)
            found = self._cache.get(job)
            if found is not None:
                found._set(index, result)
            return True
        if any(entry_ready(runtime, entry) for entry in exits):
            if self._state != _TERMINATE:
                self._maintain_pool(  # type: ignore[attr-defined]
                    self._ctx, self.Process, self._processes, self._pool, self._inqueue,
                    self._outqueue, self._initializer, self._initargs,
                    self._maxtasksperchild, self._wrap_exception)  # type: ignore[attr-defined]
            return True
        return False


class _Handover:
    """The pool's task queue: a put hands the tasks over to the workers' queue at once,
    as the task handler thread would (the same loop)."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    def put(self, item: Any) -> None:
        pool = self._pool
        taskseq, set_length = item
        task = None
        for task in taskseq:
            if pool._state == _TERMINATE:
                return
            try:
                pool._quick_put(task)
            except Exception as exc:
                job, index = task[:2]
                found = pool._cache.get(job)
                if found is not None:
                    found._set(index, (False, exc))
        if set_length:
            set_length(task[1] + 1 if task else 0)


class _FoldedCache(dict[int, Any]):
    """The pool's jobs; a job's event (or an iterator's condition) becomes ``Folded`` as it
    is filed, so waiting on it drains the pool's results. (The real cache's one addition,
    a notice to the worker handler when it empties, has nobody to tell.)"""

    def __init__(self, pool: Pool) -> None:
        super().__init__()
        self._drain = pool._drain

    def __setitem__(self, job: int, result: Any) -> None:
        super().__setitem__(job, result)
        if isinstance(result, mp_pool.IMapIterator):
            iterator: Any = result  # its fields are not in the stubs
            iterator._cond = Folded(self._drain, lambda: bool(iterator._items)
                                    or iterator._index == iterator._length)
        else:
            result._event = Folded(self._drain)


class _Nobody:
    """The change notifier: nobody to wake, no handler thread."""

    def put(self, item: Any) -> None:
        """Nothing to do."""


def _terminate_workers(workers: list[Any]) -> None:
    """``terminate``, and the end of the process that made the pool: kill and join."""
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join()
