"""A machine-wide count of stress runs allowed at once, kept with ``flock`` on slot files.

One DRA run keeps about four worker processes busy; two of them at once on a
2-core machine halve each other's parallelism and with it the races they can
find. pytest-xdist workers (and the trials of a campaign spread over hosts) take
a slot before a run, so a host never runs more than its cores allow, whatever
the scheduling mode. The kernel drops a dead holder's lock, so nothing goes stale.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

CORES_PER_RUN = 4
"""Busy processes of one default DRA run (four workers, one process each)."""


def usable_cores() -> int:
    return len(os.sched_getaffinity(0))


def default_slots() -> int:
    return max(1, usable_cores() // CORES_PER_RUN)


@contextlib.contextmanager
def cpu_slot(directory: Path, slots: int, poll_s: float = 0.02) -> Iterator[int]:
    """Hold one of ``slots`` slots in ``directory`` for the duration of the block."""
    directory.mkdir(parents=True, exist_ok=True)
    while True:
        for index in range(max(1, slots)):
            fd = os.open(directory / f"slot-{index}", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                yield index
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            return
        time.sleep(poll_s)


def xdist_slot_directory(testrunuid: str) -> Path:
    """One directory per xdist run, so separate sessions never wait on each other."""
    return Path(tempfile.gettempdir()) / f"shmstress-cpu-slots-{testrunuid}"


def xdist_testrunuid(config: object) -> str | None:
    """The xdist run this pytest process is a worker of, from its own ``workerinput``.

    Not from ``PYTEST_XDIST_TESTRUNUID``: a pytest that a test starts inherits the
    worker's environment without being a worker, and would wait for a slot of the
    outer run, held by the very test that started it.
    """
    workerinput = getattr(config, "workerinput", None)
    if not isinstance(workerinput, dict):
        return None
    testrunuid = workerinput.get("testrunuid")
    return str(testrunuid) if testrunuid is not None else None


@contextlib.contextmanager
def xdist_cpu_slot(config: object, slots: int) -> Iterator[None]:
    """A slot when ``config`` is a pytest-xdist worker's; nothing to share otherwise."""
    testrunuid = xdist_testrunuid(config)
    if testrunuid is None:
        yield
        return
    with cpu_slot(xdist_slot_directory(testrunuid), slots):
        yield
