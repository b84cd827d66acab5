"""Two processes increment one counter, each under a lock of its own: made on one line,
the locks are told apart by the names they are assigned to."""

import multiprocessing as mp


def _bump_with(lock, counter):
    with lock:
        counter.value += 1


def racy():
    counter, done = mp.Value("i", 0, lock=False), mp.Value("i", 0, lock=False)
    first, second = mp.Lock(), mp.Lock()
    workers = [mp.Process(target=_bump_with, args=(first, counter)),
               mp.Process(target=_bump_with, args=(second, counter))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    done.value = 1
    assert counter.value == 2, f"2 increments under two locks, counter is {counter.value}"
