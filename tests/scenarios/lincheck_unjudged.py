"""Objects a lincheck search cannot judge: one whose operation runs in a thread (code outside
control), one whose operation may take more steps than an execution may."""

import multiprocessing as mp
import threading

from hypothesis import strategies as st


class Threaded:
    operations = {"bump": None}  # noqa: RUF012 - as a user writes it

    def __init__(self):
        self.count = mp.Value("i", 0)

    def bump(self):
        def work():
            with self.count.get_lock():
                self.count.value += 1

        thread = threading.Thread(target=work)
        thread.start()
        thread.join()


class SometimesLong:
    """``walk(True)`` takes about 200 steps; ``walk(False)`` none."""

    operations = {"walk": st.sampled_from([False, False, True])}  # noqa: RUF012

    def __init__(self):
        self.count = mp.Value("i", 0, lock=False)

    def walk(self, far):
        for _ in range(100 if far else 0):
            self.count.value += 1
