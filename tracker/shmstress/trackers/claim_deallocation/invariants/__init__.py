"""The claim deallocation tracker's invariants, one module each."""

from shmstress.trackers.claim_deallocation.invariants.no_deallocate_while_reserved import (
    NoDeallocateWhileReserved,
)
from shmstress.trackers.claim_deallocation.invariants.no_reserve_while_deallocating import (
    NoReserveWhileDeallocating,
)
from shmstress.trackers.claim_deallocation.invariants.status_matches_driver import (
    StatusMatchesDriver,
)

INVARIANTS = (NoReserveWhileDeallocating(), NoDeallocateWhileReserved(), StatusMatchesDriver())

__all__ = [
    "INVARIANTS",
    "NoDeallocateWhileReserved",
    "NoReserveWhileDeallocating",
    "StatusMatchesDriver",
]
