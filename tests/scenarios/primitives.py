"""Every instrumented primitive used the way the real one works; each scenario asserts what
the real primitive guarantees, so an instrumented one that behaves differently fails it."""

import multiprocessing as mp
import random
import threading
import time
from multiprocessing import sharedctypes

MODULE_COUNTER = mp.Value("i", 0)  # made at import: restored before every execution
MODULE_LOCK = mp.Lock()


def _bump_module_counter():
    with MODULE_LOCK:
        MODULE_COUNTER.value += 1


def module_state():
    """Objects made at import keep their identity and start every execution afresh."""
    workers = [mp.Process(target=_bump_module_counter) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert MODULE_COUNTER.value == 2, MODULE_COUNTER.value


def _take_slot(semaphore, inside, most):
    with semaphore:
        with most.get_lock():
            inside.value += 1
            most.value = max(most.value, inside.value)
        with most.get_lock():
            inside.value -= 1


def semaphore_bounds_concurrency():
    semaphore = mp.BoundedSemaphore(2)
    inside = mp.Value("i", 0, lock=False)
    most = mp.Value("i", 0)
    workers = [mp.Process(target=_take_slot, args=(semaphore, inside, most)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert most.value <= 2, most.value
    try:
        semaphore.release()
    except ValueError:
        pass
    else:
        raise AssertionError("a BoundedSemaphore released above its bound must raise")


def _wait_then_read(event, data, seen):
    event.wait()
    seen.value = data.value


def event_orders_a_handoff():
    event = mp.Event()
    data = mp.Value("i", 0, lock=False)
    seen = mp.Value("i", -1, lock=False)
    reader = mp.Process(target=_wait_then_read, args=(event, data, seen))
    reader.start()
    data.value = 42
    event.set()
    reader.join()
    assert seen.value == 42, seen.value
    assert event.is_set()


def _phase(barrier, log, index):
    log[index] = 1
    barrier.wait()
    assert all(log[i] == 1 for i in range(len(log))), list(log)


def barrier_lets_all_pass_together():
    barrier = mp.Barrier(3)
    log = mp.Array("i", 3, lock=False)
    workers = [mp.Process(target=_phase, args=(barrier, log, i)) for i in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0, worker.exitcode


def _reenter(lock, counter):
    with lock, lock:
        counter.value += 1


def rlock_is_reentrant_and_exclusive():
    lock = mp.RLock()
    counter = sharedctypes.RawValue("i", 0)
    workers = [mp.Process(target=_reenter, args=(lock, counter)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.value == 2, counter.value


def _try_lock(lock, got):
    if lock.acquire(timeout=0.01):
        got.value += 1
        lock.release()


def timed_acquire_gives_up():
    lock = mp.Lock()
    got = mp.Value("i", 0)
    lock.acquire()
    worker = mp.Process(target=_try_lock, args=(lock, got))
    worker.start()
    worker.join()
    lock.release()
    assert got.value == 0, "the lock was held all along"


def _spin_until(flag):
    while not flag.value:
        time.sleep(0.001)


def spinning_with_sleep_yields():
    flag = mp.Value("i", 0)
    spinner = mp.Process(target=_spin_until, args=(flag,))
    spinner.start()
    flag.value = 1
    spinner.join()


def _draw(results, index):
    results[index] = random.randrange(1 << 30)


def random_draws():
    """Each process's ``random`` is seeded from the execution: a replay draws the same."""
    results = mp.Array("q", 2)
    workers = [mp.Process(target=_draw, args=(results, i)) for i in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    raise AssertionError(f"draws {list(results)}")


def _fail():
    raise KeyError("missing")


def worker_raises():
    worker = mp.Process(target=_fail)
    worker.start()
    worker.join()


def _exit_quietly():
    raise SystemExit(3)


def worker_exit_code_is_not_a_failure():
    worker = mp.Process(target=_exit_quietly)
    worker.start()
    worker.join()
    assert worker.exitcode == 3, worker.exitcode


def _block_forever(read_end):
    import os

    os.read(read_end, 1)  # a pipe nobody writes to: outside shmstress's control


def blocks_outside_control():
    import os

    read_end, _write_end = os.pipe()
    worker = mp.Process(target=_block_forever, args=(read_end,))
    worker.start()
    worker.join()


def barrier_breaks_on_timeout():
    barrier = mp.Barrier(2, timeout=0.01)
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        return
    raise AssertionError("alone at a barrier of two, the wait must time out")


def _inc_many(counter, times):
    for _ in range(times):
        with counter.get_lock():
            counter.value += 1


def contexts_and_locked_loops():
    ctx = mp.get_context("fork")
    counter = ctx.Value("i", 0)
    workers = [ctx.Process(target=_inc_many, args=(counter, 3)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.value == 6, counter.value
