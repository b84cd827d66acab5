"""The DRA tracker's invariants, one module each."""

from shmstress.trackers.dra.invariants.gather_complete import GatherComplete
from shmstress.trackers.dra.invariants.no_double_allocation import NoDoubleAllocation
from shmstress.trackers.dra.invariants.quiescent_agreement import QuiescentAgreement
from shmstress.trackers.dra.invariants.revision_monotonic import RevisionMonotonic

INVARIANTS = (NoDoubleAllocation(), GatherComplete(), QuiescentAgreement(), RevisionMonotonic())

__all__ = [
    "INVARIANTS",
    "GatherComplete",
    "NoDoubleAllocation",
    "QuiescentAgreement",
    "RevisionMonotonic",
]
