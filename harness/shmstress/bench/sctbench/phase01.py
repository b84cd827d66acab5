"""SCTBench ``phase01_bad``: a thread that ends holding a mutex the other one needs.

Both threads run ``thread1``: lock ``x``, unlock it, lock it again and never
unlock it. Whichever comes second waits for ``x`` forever, in every schedule.
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.synchronize import Lock


def thread1(x: Lock, y: Lock) -> None:
    x.acquire()  # BAD: deadlock
    x.release()
    x.acquire()
    # x.release() is commented out in the C code
    y.acquire()
    y.release()
    y.acquire()
    y.release()


def phase01_bad() -> None:
    x = mp.Lock()
    y = mp.Lock()
    t1 = mp.Process(target=thread1, args=(x, y))
    t2 = mp.Process(target=thread1, args=(x, y))
    t1.start()
    t2.start()
    t1.join()
    t2.join()
