"""The execution's processes descend from a lean host: none carries numpy unless the
scenario imports it (each fork copies the page tables of all its parent maps)."""

import multiprocessing as mp
import sys


def _no_numpy():
    assert "numpy" not in sys.modules, "a process of the execution has numpy"


def processes_without_numpy():
    _no_numpy()
    child = mp.Process(target=_no_numpy)
    child.start()
    child.join()
    assert child.exitcode == 0, child.exitcode
