"""Two processes increment a shared counter: the classic lost update, and its fix.

    shmstress test examples/plain/counter.py:racy     # fails: one increment is lost
    shmstress test examples/plain/counter.py:locked   # clean

``counter.value += 1`` reads the value, adds one and writes it back: two steps,
each under the Value's own lock, but not one step together. Holding
``get_lock()`` across both makes the increment atomic.
"""

import multiprocessing as mp

WORKERS = 2


def increment(counter):
    counter.value += 1


def increment_locked(counter):
    with counter.get_lock():
        counter.value += 1


def _run(target):
    counter = mp.Value("i", 0)
    workers = [mp.Process(target=target, args=(counter,)) for _ in range(WORKERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.value == WORKERS, f"{WORKERS} increments, counter is {counter.value}"


def racy():
    _run(increment)


def locked():
    _run(increment_locked)


if __name__ == "__main__":  # plain Python runs it too (and rarely sees the race)
    racy()
