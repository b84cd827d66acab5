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
out a *script*: one random draw for each of the next steps, drawn before any
of them runs. The worker of a scripted step is the draw's pick among the
runnable workers of that step (``draw % count`` into the ascending list the
globals hold), so whoever reaches the step maps it: the running worker goes
on while the pick is itself, and when it is another worker it parks and
posts that worker's grant itself (one handoff, not two through the
coordinator), writing the pick over the draw so that the coordinator learns
who took each step. When the step just taken may have changed the set of
runnable workers (its worker would block now, it freed a lock a blocked
worker waits for, it took a lock another parked worker waits at), that
worker lists the set again from the slots before it maps the draw. Whoever
reaches the script's end, finishes its role, or finds nobody runnable asks
the coordinator again.
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
G_RUNNABLE_N = 7  # how many workers are runnable (scripts: what the draws pick among) ...
G_AWAITED = 8  # ... the awaited locks' slots, then (at ``Channel.runnable_at``) the runnable
_GLOBAL_FIXED = 8


class Channel:
    """Built by the coordinator before the fork; its arrays are never restored between runs."""

    def __init__(self, arena: Arena, workers: int, max_locks: int, max_steps: int) -> None:
        self.workers = workers
        self.slots: SharedArray = arena.array(f"{ARRAY_PREFIX}slots", max(1, workers) * S_STRIDE)
        self.runnable_at = _GLOBAL_FIXED + max_locks  # the runnable workers, ascending
        self.globals: SharedArray = arena.array(f"{ARRAY_PREFIX}globals",
                                                self.runnable_at + max(1, workers))
        self.step_log: SharedArray = arena.array(f"{ARRAY_PREFIX}steps", max_steps + 1)
        # who took each step (a scripted step's draw until a worker maps it to its pick)
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
