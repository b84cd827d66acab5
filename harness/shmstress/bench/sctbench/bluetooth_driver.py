"""SCTBench ``bluetooth_driver_bad``: a stop that frees the device while an add is using it.

The Windows Bluetooth driver model of KISS/CHESS: ``main`` adds work
(``BCSP_PnpAdd``) while a thread stops the device. The add reads the stopping
flag, then increments the pending count; a stop that runs whole between the two
sees the count fall to 0 and marks the device stopped, and the add asserts it
is not. The ``__ESBMC_atomic_begin``/``_end`` markers are taken as no-ops and
left out (README.md says why).
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass

from shmstress.bench.sctbench._shared import Cell


@dataclass(frozen=True)
class DeviceExtension:
    pending_io: Cell
    stopping_flag: Cell
    stopping_event: Cell


def io_increment(e: DeviceExtension) -> int:
    if e.stopping_flag.value:
        return -1
    e.pending_io.value = e.pending_io.value + 1
    return 0


def io_decrement(e: DeviceExtension) -> None:
    e.pending_io.value = e.pending_io.value - 1
    pending_io = e.pending_io.value
    if pending_io == 0:
        e.stopping_event.value = 1


def pnp_add(e: DeviceExtension, stopped: Cell) -> None:
    status = io_increment(e)
    if status == 0:
        # do work here
        assert not stopped.value, "bluetooth_driver_bad: !stopped"  # BAD
    io_decrement(e)


def pnp_stop(e: DeviceExtension, stopped: Cell) -> None:
    e.stopping_flag.value = 1
    io_decrement(e)
    if e.stopping_event.value:
        # release allocated resource
        stopped.value = 1


def bluetooth_driver_bad() -> None:
    pending_io = mp.Value("i", 0, lock=False)
    stopping_flag = mp.Value("i", 0, lock=False)
    stopping_event = mp.Value("i", 0, lock=False)
    e = DeviceExtension(pending_io, stopping_flag, stopping_event)
    stopped: Cell = mp.Value("i", 0, lock=False)
    e.pending_io.value = 1
    e.stopping_flag.value = 0
    e.stopping_event.value = 0
    stopped.value = 0
    stopper = mp.Process(target=pnp_stop, args=(e, stopped))
    stopper.start()
    pnp_add(e, stopped)
    stopper.join()
