"""``concurrent.futures.ProcessPoolExecutor`` with its manager thread folded in.

The real executor's workers run the real ``_process_worker`` loop over a bounded call
queue and a result queue (here this engine's ``Queue`` and ``SimpleQueue``); its manager
thread hands work items over as the call queue has room, turns results into finished
futures, replaces a worker that exits after ``max_tasks_per_child``, and marks the pool
broken when a worker dies. Here that thread's work is done by the process that submits
and waits (``sync/fold.py``): ``submit`` hands over what fits, one step each; waiting on
a future (``result``, ``exception``, ``as_completed``, ``wait``, ``map``) drains the
result queue, one step a result, and hands over more as results free room; ``shutdown``
(and the end of the process that made the executor) drains what is left, sends each
worker its sentinel and joins them. Futures are the real ones, whose condition is
``Folded``. An executor made without ``max_workers`` has ``pool.DEFAULT_WORKERS``.
Waiting at once on the futures of two executors drains only the first one's results.
"""

from __future__ import annotations

import collections
import sys
from concurrent.futures import _base
from concurrent.futures import process as cf_process
from multiprocessing import get_context, util
from multiprocessing.reduction import ForkingPickler
from typing import Any, ClassVar

from shmstress.plain.runtime import PlainRuntime
from shmstress.plain.sync.connection import entry_ready, wait_for_any
from shmstress.plain.sync.fold import Folded
from shmstress.plain.sync.naming import made_name
from shmstress.plain.sync.pool import DEFAULT_WORKERS
from shmstress.plain.sync.queue import Queue, SimpleQueue

PLUMBING = True


def executor_worker(*args: Any) -> None:
    """The real executor worker loop, under a name that says what the process is."""
    cf_process._process_worker(*args)


class ProcessPoolExecutor(cf_process.ProcessPoolExecutor):
    _runtime: ClassVar[PlainRuntime]
    _queue: ClassVar[type[Queue]]
    _simple_queue: ClassVar[type[SimpleQueue]]

    def __init__(self, max_workers: int | None = None, mp_context: Any = None,
                 initializer: Any = None, initargs: tuple[Any, ...] = (), *,
                 max_tasks_per_child: int | None = None) -> None:
        if max_workers is not None and max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        workers = DEFAULT_WORKERS if max_workers is None else max_workers
        if mp_context is None:
            mp_context = get_context("spawn" if max_tasks_per_child is not None else None)
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        if max_tasks_per_child is not None:
            if not isinstance(max_tasks_per_child, int):
                raise TypeError("max_tasks_per_child must be an integer")
            if max_tasks_per_child <= 0:
                raise ValueError("max_tasks_per_child must be >= 1")
            if mp_context.get_start_method(allow_none=False) == "fork":
                raise ValueError("max_tasks_per_child is incompatible with the 'fork' "
                                 "multiprocessing start method; supply a different "
                                 "mp_context.")
        self._max_workers = workers
        self._mp_context = mp_context
        self._queue_count = 0
        name = made_name(sys._getframe(1), "executor")
        self._manager = _Manager(
            self._runtime, mp_context, workers, (initializer, initargs, max_tasks_per_child),
            self._queue(workers + cf_process.EXTRA_QUEUED_CALLS, name=f"{name}.calls",
                        piped=False),
            self._simple_queue(name=f"{name}.results", piped=False))
        util.Finalize(self, self._manager.finish, exitpriority=20)

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> _base.Future[Any]:
        manager = self._manager
        if manager.broken:
            raise cf_process.BrokenProcessPool(manager.broken)
        if manager.shutting_down:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future: _base.Future[Any] = _base.Future()
        manager.fold(future)
        manager.pending[self._queue_count] = cf_process._WorkItem(future, fn, args, kwargs)
        manager.work_ids.append(self._queue_count)
        self._queue_count += 1
        manager.start_workers()
        manager.hand_over()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        manager = self._manager
        manager.shutting_down = True
        if cancel_futures:
            manager.cancel_pending()
        if wait:
            manager.finish()


class _Manager:
    """The executor's manager thread, as steps of the process that uses the executor."""

    def __init__(self, runtime: PlainRuntime, context: Any, workers: int,
                 worker_args: tuple[Any, Any, Any], calls: Queue,
                 results: SimpleQueue) -> None:
        self._runtime = runtime
        self._context = context
        self._workers = workers
        self._worker_args = worker_args
        self.calls = calls
        self.results = results
        self.processes: dict[int, Any] = {}
        self.pending: dict[int, Any] = {}
        self.work_ids: collections.deque[int] = collections.deque()
        self.shutting_down = False
        self.broken = ""
        self._finished = False

    def fold(self, future: _base.Future[Any]) -> None:
        """Make waiting on ``future`` (or on futures with it) drain this executor."""
        vars(future)["_condition"] = Folded(self.drain, future.done)
        vars(future)["_waiters"] = _Waiters(self.drain)

    def start_workers(self) -> None:
        for _ in range(len(self.processes), self._workers):
            initializer, initargs, max_tasks = self._worker_args
            process = self._context.Process(target=executor_worker, args=(
                self.calls, self.results, initializer, initargs, max_tasks))
            process.start()
            self.processes[process.pid] = process

    def hand_over(self) -> None:
        """Work items into the call queue while it has room (``add_call_item_to_queue``)."""
        while self.work_ids and not self.calls.full():
            work_id = self.work_ids.popleft()
            item = self.pending[work_id]
            if item.future.set_running_or_notify_cancel():
                self.calls.put(cf_process._CallItem(work_id, item.fn, item.args, item.kwargs))
            else:
                del self.pending[work_id]

    def drain(self, timeout: float | None) -> bool:
        """One step: wait for a result or a worker's exit; False if neither came in time."""
        runtime = self._runtime
        exits = [-1 - process._popen._slot for process in self.processes.values()]
        wait_for_any(runtime, f"get from {self.results.name}", [self.results._row, *exits],
                     timeout)
        data = self.results._reader._take_now()
        if data is not None:
            self._result(ForkingPickler.loads(data))
            return True
        if any(entry_ready(runtime, entry) for entry in exits):
            self._broken()
            return True
        return False

    def _result(self, item: Any) -> None:
        if isinstance(item, int):  # a worker's pid: it got its sentinel and exits
            process = self.processes.pop(item, None)
            if process is not None:
                process.join()
            return
        work_item = self.pending.pop(item.work_id, None)
        if work_item is not None:
            if item.exception:
                work_item.future.set_exception(item.exception)
            else:
                work_item.future.set_result(item.result)
        if item.exit_pid is not None:  # it did its max_tasks_per_child
            self.processes.pop(item.exit_pid).join()
            if not self.shutting_down:
                self.start_workers()
        self.hand_over()

    def _broken(self) -> None:
        """A worker died: every pending future fails, the others are killed."""
        self.broken = ("A child process terminated abruptly, the process pool is not usable "
                       "anymore")
        self.shutting_down = True
        error = cf_process.BrokenProcessPool(
            "A process in the process pool was terminated abruptly while the future was "
            "running or pending.")
        for work_item in self.pending.values():
            work_item.future.set_exception(error)
        self.pending.clear()
        self.work_ids.clear()
        for process in self.processes.values():
            process.terminate()
        for process in self.processes.values():
            process.join()
        self.processes.clear()

    def cancel_pending(self) -> None:
        for work_id in self.work_ids:
            self.pending.pop(work_id).future.cancel()
        self.work_ids.clear()

    def finish(self) -> None:
        """Run the pending work to its end, stop the workers, join them (once)."""
        if self._finished:
            return
        self._finished = True
        self.shutting_down = True
        while self.pending and not self.broken:
            self.hand_over()
            self.drain(None)
        for _ in self.processes:
            self.calls.put(None)
        for process in self.processes.values():
            process.join()


class _Waiters(list[Any]):
    """A future's waiters (``as_completed``, ``wait``): an event installed here drains."""

    def __init__(self, drain: Any) -> None:
        super().__init__()
        self._drain = drain

    def append(self, waiter: Any) -> None:
        if not isinstance(waiter.event, Folded):
            waiter.event = Folded(self._drain)
        super().append(waiter)
