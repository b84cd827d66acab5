"""A consumer that goes to sleep when it finds no item, and a producer that wakes it only
if it already sleeps; the consumer sleeps by polling a wake-up flag (``time.sleep(0)``
between looks), so nothing blocks: the lost wake-up is a spin that never ends.

    shmstress test examples/plain/sleeper.py:lost_wakeup   # no progress: the spin named
    shmstress test examples/plain/sleeper.py:locked        # clean
"""

import multiprocessing as mp
import time
from contextlib import nullcontext

ITEMS = 2


def producer(items, sleeping, wake, lock):
    for _ in range(ITEMS):
        with lock or nullcontext():
            items.value += 1
            if sleeping.value:  # racy: the consumer may be between its look and its sleep
                wake.value = 1


def consumer(items, sleeping, wake, lock):
    taken = 0
    while taken < ITEMS:
        with lock or nullcontext():
            if items.value > 0:
                items.value -= 1
                taken += 1
                continue
            sleeping.value = 1
        while not wake.value:
            time.sleep(0)
        wake.value = 0
        sleeping.value = 0


def _run(lock):
    items = mp.Value("i", 0, lock=False)
    sleeping = mp.Value("i", 0, lock=False)
    wake = mp.Value("i", 0, lock=False)
    processes = [mp.Process(target=role, args=(items, sleeping, wake, lock))
                 for role in (consumer, producer)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()


def lost_wakeup():
    _run(None)


def locked():
    _run(mp.Lock())
