"""A manager started while the module is imported: its objects start every execution as the
import left them."""

import multiprocessing as mp
from multiprocessing.managers import SyncManager

MANAGER = SyncManager()
MANAGER.start()
COUNTS = MANAGER.dict(done=0)
LOCK = MANAGER.Lock()


def _finish():
    with LOCK:
        COUNTS["done"] += 1


def module_manager():
    workers = [mp.Process(target=_finish) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert COUNTS["done"] == 2, COUNTS.copy()
