"""The shared memory and semaphores through which the coordinator hands out steps.

One worker runs at a time. A worker reaching a point writes what it is about
to do (label, lock) into its slots, posts the coordinator's report semaphore
and waits on its own grant semaphore. The coordinator grants the point by
logging it as the next step and posting that worker's semaphore, with a
*lease*: how many further points the worker may take on its own before it
must ask again. Leases keep the common case (the same worker goes on) free
of handoffs; a lease ends early when the worker yields, would block on a
lock, or frees a lock a parked worker is waiting for, so a strategy sees
every point where its choice could differ.

A strategy that draws its choices ahead of time (random walk) instead hands
out a *script*: the worker of each of the next steps, drawn for the set of
runnable workers at the grant. The running worker follows it on its own: it
goes on while the script names it, and when the script names another worker
it parks and posts that worker's grant itself (one handoff, not two through
the coordinator). Whoever reaches the script's end, or a point where the set
of runnable workers may have changed (it would block, it freed a lock a
blocked worker waits for, its last step took a lock another parked worker
waits at, it finished), asks the coordinator again.
"""

from __future__ import annotations

from multiprocessing.synchronize import Semaphore as MpSemaphore

from shmstress.core.control import FORK
from shmstress.core.shm import Arena, SharedArray

ARRAY_PREFIX = "controlled."

# per-worker slots
S_STATE = 0
S_LABEL = 1  # label id (in the recorder's string table) of the point the worker waits at
S_LOCK = 2  # instrumented lock slot if that point acquires a lock, else -1
S_YIELDED = 3  # the worker called os.sched_yield since its previous point
S_LEASE = 4  # further points the worker may take before it must ask again
S_CMD = 5  # what an idle worker is asked to do next
S_PHASE = 6  # the phase the worker's current role step was given
S_STRIDE = 8

# worker states (0: not started yet)
PARKED = 1
RUNNING = 2
FINISHED = 3
ABORTED = 4
CRASHED = 5

# commands to an idle worker
CMD_EXECUTE = 1
CMD_EXIT = 2

# global slots
G_STEP = 0  # index of the next step of this execution
G_EXEC_SEED = 1  # worker RNGs derive from (execution seed, worker id)
G_RECORD = 2  # 1: record this execution's points into the rings
G_SCRIPT_END = 3  # steps before this one follow the script (0: no script)
G_CURRENT = 4  # the worker running now (a scripted handoff changes it without the coordinator)
G_HANDOFF_PREEMPTIONS = 5  # scripted handoffs away from a worker that could have gone on
G_AWAITED_N = 6  # how many locks blocked workers wait for ...
G_AWAITED = 7  # ... and their slots
_GLOBAL_FIXED = 7


class Channel:
    """Built by the coordinator before the fork; its arrays are never restored between runs."""

    def __init__(self, arena: Arena, workers: int, max_locks: int, max_steps: int) -> None:
        self.workers = workers
        self.slots: SharedArray = arena.array(f"{ARRAY_PREFIX}slots", max(1, workers) * S_STRIDE)
        self.globals: SharedArray = arena.array(f"{ARRAY_PREFIX}globals",
                                                _GLOBAL_FIXED + max_locks)
        self.step_log: SharedArray = arena.array(f"{ARRAY_PREFIX}steps", max_steps + 1)
        self.script: SharedArray = arena.array(f"{ARRAY_PREFIX}script", max_steps + 1)
        self.report: MpSemaphore = FORK.Semaphore(0)
        self.grants: list[MpSemaphore] = [FORK.Semaphore(0) for _ in range(workers)]

    def slot(self, worker: int, name: int) -> int:
        return int(self.slots.mv[worker * S_STRIDE + name])

    def slot_global(self, name: int) -> int:
        return int(self.globals.mv[name])

    def set_slot(self, worker: int, name: int, value: int) -> None:
        self.slots.mv[worker * S_STRIDE + name] = value


def is_channel_array(name: str) -> bool:
    return name.startswith(ARRAY_PREFIX)
