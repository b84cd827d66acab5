"""A small job-statistics library over multiprocessing managers, in the shapes real ones have,
and scenarios that use it: each racy version (read-modify-write through proxies) has a
correct twin (the same under a manager's lock, or one method call per update).

Every way in is used: ``mp.Manager()``, a context's ``Manager()``, ``SyncManager`` and
``BaseManager`` imported from ``multiprocessing.managers``, ``SharedMemoryManager``. The
scenarios run as they are under plain Python too (``tests/plain_twins.py`` counts failures there).
"""

import multiprocessing as mp
import os
import pickle
import threading
import time
from multiprocessing.managers import BaseManager, SharedMemoryManager, SyncManager

WORKERS = 3


class JobStats:
    """Counts finished jobs per kind in a manager's dict; ``lock``: a manager's lock."""

    def __init__(self, manager, lock=None):
        self._counts = manager.dict()
        self._lock = lock

    def record(self, kind):
        if self._lock is None:
            self._counts[kind] = self._counts.get(kind, 0) + 1
        else:
            with self._lock:
                self._counts[kind] = self._counts.get(kind, 0) + 1

    def count(self, kind):
        return self._counts.get(kind, 0)


class Slots:
    """A bounded list of claimed jobs: a claim succeeds while there is room."""

    def __init__(self, manager, capacity, lock=None):
        self._claimed = manager.list()
        self._capacity = capacity
        self._lock = lock

    def claim(self, job):
        if self._lock is not None:
            with self._lock:
                return self._claim(job)
        return self._claim(job)

    def _claim(self, job):
        if len(self._claimed) < self._capacity:
            self._claimed.append(job)
            return True
        return False

    def claimed(self):
        return list(self._claimed)


class Tally:
    """A counter object a manager holds (registered below)."""

    def __init__(self):
        self._value = 0

    def add(self, amount):
        self._value += amount

    def get(self):
        return self._value

    def set(self, value):
        self._value = value


class StatsManager(BaseManager):
    """A user's manager with a registered class."""


StatsManager.register("Tally", Tally)


def _run(target, args, count=WORKERS):
    workers = [mp.Process(target=target, args=args) for _ in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


# -- a dict of counters ---------------------------------------------------------------------
def _finish_job(stats):
    stats.record("done")


def dict_racy():
    with mp.Manager() as manager:
        stats = JobStats(manager)
        _run(_finish_job, (stats,))
        assert stats.count("done") == WORKERS, f"{WORKERS} jobs, counted {stats.count('done')}"


def dict_locked():
    with mp.get_context("fork").Manager() as manager:
        stats = JobStats(manager, manager.Lock())
        _run(_finish_job, (stats,))
        assert stats.count("done") == WORKERS, f"{WORKERS} jobs, counted {stats.count('done')}"


# -- a list: append, and a length check before it -------------------------------------------
def _claim(slots, job):
    slots.claim(job)


def list_racy():
    manager = SyncManager()
    manager.start()
    slots = Slots(manager, capacity=1)
    _run(_claim, (slots, "job"), 2)
    claimed = slots.claimed()
    manager.shutdown()
    assert len(claimed) <= 1, f"capacity 1, claimed {claimed}"


def list_locked():
    manager = SyncManager()
    manager.start()
    try:
        slots = Slots(manager, capacity=1, lock=manager.RLock())
        _run(_claim, (slots, "job"), 2)
        claimed = slots.claimed()
        assert len(claimed) == 1, f"capacity 1, claimed {claimed}"
    finally:
        manager.shutdown()


# -- a Namespace of totals ------------------------------------------------------------------
def _add_to_total(totals, lock):
    if lock is None:
        totals.jobs += 1
    else:
        with lock:
            totals.jobs += 1


def namespace_racy():
    with mp.Manager() as manager:
        totals = manager.Namespace(jobs=0)
        _run(_add_to_total, (totals, None), 2)
        assert totals.jobs == 2, f"2 jobs, total {totals.jobs}"


def namespace_locked():
    with mp.Manager() as manager:
        totals = manager.Namespace(jobs=0)
        _run(_add_to_total, (totals, manager.Lock()), 2)
        assert totals.jobs == 2, f"2 jobs, total {totals.jobs}"


# -- a registered class -------------------------------------------------------------------------
def _bump_by_get_set(tally):
    tally.set(tally.get() + 1)


def _bump_by_add(tally):
    tally.add(1)


def registered_racy():
    with StatsManager() as manager:
        tally = manager.Tally()
        _run(_bump_by_get_set, (tally,), 2)
        assert tally.get() == 2, f"2 jobs, tally {tally.get()}"


def registered_atomic():
    with StatsManager() as manager:
        tally = manager.Tally()
        _run(_bump_by_add, (tally,), 2)
        assert tally.get() == 2, f"2 jobs, tally {tally.get()}"


# -- SharedMemoryManager: a ShareableList shared by processes -----------------------------------
def _bump_slot(counts, lock):
    if lock is None:
        counts[0] += 1
    else:
        with lock:
            counts[0] += 1


def _shareable(lock):
    smm = SharedMemoryManager()
    smm.start()
    counts = smm.ShareableList([0, 0])
    block = smm.SharedMemory(64)
    names = (counts.shm.name, block.name)
    _run(_bump_slot, (counts, lock), 2)
    total = counts[0]
    smm.shutdown()
    for name in names:  # shutdown unlinked what the manager made
        assert not os.path.exists(f"/dev/shm/{name}"), f"{name} left after shutdown"
    assert total == 2, f"2 jobs, count {total}"


def shareable_racy():
    _shareable(None)


def shareable_locked():
    _shareable(mp.Lock())


# -- blocking objects a manager makes ---------------------------------------------------------
def _wait_for_go(go, ready, done, cond, barrier):
    ready.acquire()  # a Semaphore's
    go.wait()
    barrier.wait()
    with cond:
        done.value += 1
        cond.notify_all()


def sync_objects():
    with mp.Manager() as manager:
        go, ready = manager.Event(), manager.Semaphore(0)
        done, cond = manager.Value("i", 0), manager.Condition()
        barrier = manager.Barrier(2)
        workers = [mp.Process(target=_wait_for_go, args=(go, ready, done, cond, barrier))
                   for _ in range(2)]
        for worker in workers:
            worker.start()
        ready.release()
        ready.release()
        go.set()
        with cond:
            cond.wait_for(lambda: done.value == 2)
        for worker in workers:
            worker.join()
        assert done.value == 2


# -- proxies that travel pickled; a queue of the manager -------------------------------------
def _from_bytes(blob):
    counts, lock = pickle.loads(blob)
    with lock:
        counts["done"] = counts.get("done", 0) + 1


def pickled_proxies():
    with mp.Manager() as manager:
        counts, lock = manager.dict(), manager.Lock()
        _run(_from_bytes, (pickle.dumps((counts, lock)),), 2)
        assert counts["done"] == 2, counts.copy()


def _append_job(board, job):
    board["jobs"].append(job)  # a list proxy kept in the dict: the shared list itself


def nested_and_iterated():
    with mp.Manager() as manager:
        jobs = manager.list()
        board = manager.dict(jobs=jobs, owner="main")
        _run(_append_job, (board, "job"), 2)
        assert sorted(board["jobs"]) == ["job", "job"], board["jobs"][:]
        assert sorted(board) == ["jobs", "owner"]  # iterated: one step, its keys
        assert dict(board.items())["owner"] == "main"
        tallies = StatsManager()
        tallies.start()
        tally = tallies.Tally()
        _run(_bump_by_add, (pickle.loads(pickle.dumps(tally)),), 1)  # an AutoProxy, pickled
        assert tally.get() == 1
        tallies.shutdown()


def _produce(jobs):
    for job in range(3):
        jobs.put(job)
    jobs.put(None)


def queue_pipeline():
    with mp.Manager() as manager:
        jobs = manager.Queue()
        producer = mp.Process(target=_produce, args=(jobs,))
        producer.start()
        got = []
        while (job := jobs.get()) is not None:
            got.append(job)
        producer.join()
        assert got == [0, 1, 2], got


# -- what a manager cannot hold under control -------------------------------------------------
class Guarded:
    """State with a thread lock in it: the real server holds it; it does not pickle."""

    def __init__(self):
        self._lock = threading.Lock()


class Stepping:
    """A method that sleeps between its read and its write."""

    def __init__(self):
        self.value = 0

    def slow_add(self):
        seen = self.value
        time.sleep(0)
        self.value = seen + 1


class OddManager(BaseManager):
    pass


OddManager.register("Guarded", Guarded)
OddManager.register("Stepping", Stepping)


def unpicklable_object():
    with OddManager() as manager:
        manager.Guarded()


def _slow_add(stepping):
    stepping.slow_add()


def stepping_method():
    with OddManager() as manager:
        stepping = manager.Stepping()
        _run(_slow_add, (stepping,), 2)


def growing_values():
    """Values that outgrow their place in the manager's store, until it has to compact."""
    with mp.Manager() as manager:
        blobs = manager.dict(blob=b"")
        for size, fill in ((300_000, b"a"), (400_000, b"b"), (600_000, b"c"), (10, b"d")):
            blobs["blob"] = fill * size
            blob = blobs["blob"]
            assert len(blob) == size and blob[:1] == blob[-1:] == fill, (size, len(blob))


def too_big_a_value():
    with mp.Manager() as manager:
        blobs = manager.dict()
        blobs["blob"] = b"x" * 2_000_000
