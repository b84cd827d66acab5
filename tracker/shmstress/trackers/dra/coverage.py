"""Ghost state for ``gather-complete``: since when is each device known to be allocated?

A device is *covered* while some claim holds it in the assume cache's latest
object or in the in-flight map. The two structures live under different
locks, so the count is kept under the ghost lock: bookkeeping of the oracle,
not of the system under test, and never a point.

``since`` is the number of points handed out just after the write that
covered the device: every point numbered ``>= since`` began after the device
was covered. A gather that started at ``start`` and misses a device still
covered with ``since <= start`` missed a device allocated for its whole run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shmstress.api import NO_ID, Ghost
from shmstress.trackers.common import SMALL_ARRAY


class Coverage:
    def __init__(self, ghost: Ghost, devices: int) -> None:
        self.count = ghost.array("dra.count", devices)
        self.since = ghost.array("dra.since", devices)
        self.claim = ghost.array("dra.claim", devices, NO_ID)
        self._ghost = ghost

    def cover(self, device: int, claim: int) -> None:
        with self._ghost.lock:
            count = self.count.mv[device]
            self.count.mv[device] = count + 1
            if count == 0:
                self.since.mv[device] = self._ghost.seq()
                self.claim.mv[device] = claim

    def uncover(self, device: int) -> None:
        with self._ghost.lock:
            self.count.mv[device] -= 1

    def changed(self, claim: int, old: int, new: int) -> None:
        """A structure moved ``claim`` from device ``old`` to ``new`` (either may be NO_ID)."""
        if old == new:
            return
        if new != NO_ID:
            self.cover(new, claim)
        if old != NO_ID:
            self.uncover(old)

    def missed(self, seen: Sequence[bool], start_seq: int) -> list[tuple[int, int]]:
        """(device, claim) pairs covered since before ``start_seq`` yet absent from ``seen``
        (bool per device), lowest device first."""
        with self._ghost.lock:
            count = self.count.mv
            if len(count) <= SMALL_ARRAY:  # at every gather: a Python scan beats numpy's calls
                since, claim = self.since.mv, self.claim.mv
                return [(device, claim[device]) for device, held in enumerate(count)
                        if held > 0 and not seen[device] and since[device] <= start_seq]
            missing = ~np.asarray(seen) & (self.count.np > 0) & (self.since.np <= start_seq)
            devices = np.flatnonzero(missing)
            return [(int(d), int(self.claim.np[d])) for d in devices]
