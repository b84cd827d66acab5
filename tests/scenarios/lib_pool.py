"""A small job counter over a process pool, of the shape real ones have: each job is done
by a pool worker, which bumps a shared ``Value`` of jobs done; the worker gets the value
through the pool's initializer, as real code must (a ``Value`` travels by inheritance,
not in a task).

``count_racy`` bumps it with ``done.value += 1`` outside the value's lock (a lost update
when two workers bump at once); ``count_locked`` holds the lock. The same two shapes run
over ``multiprocessing.Pool.map`` and over ``concurrent.futures.ProcessPoolExecutor``.
"""

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import Pool

_done = None


def _adopt(done):
    global _done
    _done = done


def count_racy(job):
    _done.value += 1
    return job * job


def count_locked(job):
    with _done.get_lock():
        _done.value += 1
    return job * job


def _pool_map(count):
    done = mp.Value("i", 0)
    with Pool(2, initializer=_adopt, initargs=(done,)) as pool:
        squares = pool.map(count, range(4), chunksize=1)
    assert squares == [0, 1, 4, 9]
    assert done.value == 4, f"4 jobs, {done.value} counted"


def pool_racy():
    _pool_map(count_racy)


def pool_locked():
    _pool_map(count_locked)


def _executor_submit(count):
    done = mp.Value("i", 0)
    with ProcessPoolExecutor(max_workers=2, initializer=_adopt, initargs=(done,)) as executor:
        futures = [executor.submit(count, job) for job in range(4)]
        squares = sorted(future.result() for future in as_completed(futures))
    assert squares == [0, 1, 4, 9]
    assert done.value == 4, f"4 jobs, {done.value} counted"


def executor_racy():
    _executor_submit(count_racy)


def executor_locked():
    _executor_submit(count_locked)


def _square(number):
    return number * number


def _fail(number):
    raise ValueError(f"job {number} failed")


def pool_everything():
    """Every way in: each result checked."""
    pool = mp.get_context("fork").Pool(2)
    asynchronous = pool.apply_async(_square, (3,))
    assert asynchronous.get() == 9
    assert pool.apply(_square, (4,)) == 16
    assert list(pool.imap(_square, range(4))) == [0, 1, 4, 9]
    assert sorted(pool.imap_unordered(_square, range(4), chunksize=2)) == [0, 1, 4, 9]
    assert pool.starmap(pow, [(2, 3), (3, 2)]) == [8, 9]
    mapped = pool.map_async(_square, [1, 2])
    while not mapped.ready():  # polls end: looking takes what the workers sent
        pass
    assert mapped.get() == [1, 4]
    errors = []
    pool.apply_async(_fail, (5,), error_callback=errors.append).wait()
    assert [str(error) for error in errors] == ["job 5 failed"]
    pool.close()
    pool.join()


def pool_maxtasks():
    """Workers that exit after two tasks are replaced, and every job still gets done."""
    with mp.Pool(2, maxtasksperchild=2) as pool:
        assert pool.map(_square, range(6), chunksize=1) == [0, 1, 4, 9, 16, 25]


def executor_everything():
    with ProcessPoolExecutor(max_workers=2) as executor:
        assert list(executor.map(_square, range(5), chunksize=2)) == [0, 1, 4, 9, 16]
        failing = executor.submit(_fail, 1)
        assert str(failing.exception()) == "job 1 failed"
        assert executor.submit(_square, 5).result() == 25
