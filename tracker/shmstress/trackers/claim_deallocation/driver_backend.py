"""The resource driver's own record of what is allocated: the hardware, not the API object.

Deallocation frees the hardware first and then clears the claim status, as
a driver must; ``no-deallocate-while-reserved`` is checked at the moment
the hardware is freed, against ReservedFor as the API server holds it then
(an oracle read without a point: it never changes what the system does).
"""

from __future__ import annotations

from shmstress.api import Lock, Runtime, Setup
from shmstress.trackers.claim_deallocation.api_server import ApiServer


class DriverBackend:
    def __init__(
        self, runtime: Runtime, setup: Setup, lock: Lock, api: ApiServer, claims: int,
    ) -> None:
        self._runtime = runtime
        self._api = api
        self.lock = lock
        self.allocated = setup.array("claims.driver.allocated", claims)

    def allocate(self, claim: int) -> None:
        with self.lock.held("Allocated claim in the driver", claim=claim):
            self.allocated.mv[claim] = 1

    def deallocate(self, claim: int, since: int) -> None:
        """Free the hardware; ``since`` is where the driver's read of the claim began."""
        with self.lock.held("Deallocating claim in the driver", claim=claim):
            self.allocated.mv[claim] = 0
            users = int(self._api.reserved_for.mv[claim])
            if users:
                self._runtime.violation(
                    "no-deallocate-while-reserved", claim=claim,
                    pod=(users & -users).bit_length() - 1, users=users.bit_count(),
                    worker=self._runtime.worker_id, since=since,
                )
