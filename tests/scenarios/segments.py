"""A scenario that keeps a segment of its own open for a long time (a coordinator killed
meanwhile leaves it behind, for the sweep to find by the run's list)."""

import multiprocessing as mp
from multiprocessing import shared_memory


def _churn(counter, lock, rounds):
    for _ in range(rounds):
        with lock:
            counter.value += 1


def long_with_a_segment():
    block = shared_memory.SharedMemory(create=True, size=4096)
    try:
        counter, lock = mp.Value("i", 0, lock=False), mp.Lock()
        workers = [mp.Process(target=_churn, args=(counter, lock, 200_000)) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        block.close()
        block.unlink()
