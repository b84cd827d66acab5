"""A job counter over a process pool, and a task queue: real shapes, each with its race.

    shmstress test examples/plain/jobs.py:pool_racy      # fails: a count is lost
    shmstress test examples/plain/jobs.py:pool_locked    # clean
    shmstress test examples/plain/jobs.py:queue_racy     # fails: an answer read too early
    shmstress test examples/plain/jobs.py:queue_fixed    # clean

A pool worker gets the shared ``Value`` through the pool's initializer (a ``Value``
travels by inheritance, not in a task) and bumps it once per job. In the queue, each
worker stores its answer in a shared ``Array`` and marks the task done; the racy one
marks it done first, so the caller, which joined the queue, can read an answer that is
not there yet.
"""

import multiprocessing as mp

JOBS = 4
WORKERS = 2
_done = None


def _adopt(done):
    global _done
    _done = done


def _count_racy(job):
    _done.value += 1  # a read step and a write step, another worker's between them
    return job * job


def _count_locked(job):
    with _done.get_lock():
        _done.value += 1
    return job * job


def _pool(count):
    done = mp.Value("i", 0)
    with mp.Pool(WORKERS, initializer=_adopt, initargs=(done,)) as pool:
        squares = pool.map(count, range(JOBS), chunksize=1)
    assert squares == [job * job for job in range(JOBS)]
    assert done.value == JOBS, f"{JOBS} jobs, {done.value} counted"


def pool_racy():
    _pool(_count_racy)


def pool_locked():
    _pool(_count_locked)


def _answer(tasks, answers, done_first):
    while True:
        job = tasks.get()
        if job is None:
            tasks.task_done()
            return
        if done_first:
            tasks.task_done()  # the caller may wake before the answer is stored
            answers[job] = job * job
        else:
            answers[job] = job * job
            tasks.task_done()


def _queue(done_first):
    tasks = mp.JoinableQueue()
    answers = mp.Array("i", [-1] * JOBS)
    workers = [mp.Process(target=_answer, args=(tasks, answers, done_first))
               for _ in range(WORKERS)]
    for worker in workers:
        worker.start()
    for job in range(JOBS):
        tasks.put(job)
    tasks.join()
    got = list(answers)
    assert got == [job * job for job in range(JOBS)], f"answers: {got}"
    for _ in workers:
        tasks.put(None)
    for worker in workers:
        worker.join()


def queue_racy():
    _queue(done_first=True)


def queue_fixed():
    _queue(done_first=False)
