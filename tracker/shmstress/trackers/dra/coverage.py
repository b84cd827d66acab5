"""Ghost state for ``gather-complete``: since when is each device known to be allocated?

A device is *covered* while some claim holds it in the assume cache's latest
object or in the in-flight map. The two structures live under different
locks, so the count is kept under a ghost lock of its own: bookkeeping of the
oracle, not of the system under test, and never a point.

``since`` is the global sequence counter read just after the write that
covered the device: every point numbered ``>= since`` began after the device
was covered. A gather that started at ``start`` and misses a device still
covered with ``since <= start`` missed a device allocated for its whole run.
"""

from __future__ import annotations

import numpy as np
from shmstress.core.control import FORK, ControlBlock
from shmstress.core.shm import Arena
from shmstress.trackers.dra.names import NONE


class Coverage:
    def __init__(self, arena: Arena, control: ControlBlock, devices: int) -> None:
        self.count = arena.array("dra.ghost.count", devices)
        self.since = arena.array("dra.ghost.since", devices)
        self.claim = arena.array("dra.ghost.claim", devices, NONE)
        self._control = control.control.mv
        self._lock = FORK.Lock()

    def cover(self, device: int, claim: int) -> None:
        with self._lock:
            count = self.count.mv[device]
            self.count.mv[device] = count + 1
            if count == 0:
                self.since.mv[device] = self._control[0]  # control.SEQ
                self.claim.mv[device] = claim

    def uncover(self, device: int) -> None:
        with self._lock:
            self.count.mv[device] -= 1

    def changed(self, claim: int, old: int, new: int) -> None:
        """A structure moved ``claim`` from device ``old`` to ``new`` (either may be NONE)."""
        if old == new:
            return
        if new != NONE:
            self.cover(new, claim)
        if old != NONE:
            self.uncover(old)

    def missed(self, seen: np.ndarray, start_seq: int) -> list[tuple[int, int]]:
        """(device, claim) pairs covered since before ``start_seq`` yet absent from ``seen``."""
        with self._lock:
            missing = (~seen) & (self.count.np > 0) & (self.since.np <= start_seq)
            devices = np.flatnonzero(missing)
            return [(int(d), int(self.claim.np[d])) for d in devices]
