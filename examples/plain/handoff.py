"""A consumer waits on a Condition for a producer's item: without a check of the flag
before waiting, a notify that comes first is lost and the consumer waits forever.

    shmstress test examples/plain/handoff.py:lost_notify   # no progress: cv named
    shmstress test examples/plain/handoff.py:checked       # clean
"""

import multiprocessing as mp


def producer(cv, ready):
    with cv:
        ready.value = 1
        cv.notify()


def consumer_unchecked(cv, ready):
    with cv:
        cv.wait()
        assert ready.value == 1


def consumer_checked(cv, ready):
    with cv:
        cv.wait_for(lambda: ready.value == 1)


def _run(consumer):
    cv = mp.Condition()
    ready = mp.Value("i", 0, lock=False)
    processes = [mp.Process(target=consumer, args=(cv, ready)),
                 mp.Process(target=producer, args=(cv, ready))]
    for process in processes:
        process.start()
    for process in processes:
        process.join()


def lost_notify():
    _run(consumer_unchecked)


def checked():
    _run(consumer_checked)
