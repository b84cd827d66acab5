"""The DRA tracker's invariants, one module each."""

from tracker.dra.invariants.gather_complete import GatherComplete
from tracker.dra.invariants.no_double_allocation import NoDoubleAllocation
from tracker.dra.invariants.quiescent_agreement import QuiescentAgreement
from tracker.dra.invariants.revision_monotonic import RevisionMonotonic

INVARIANTS = (NoDoubleAllocation(), GatherComplete(), QuiescentAgreement(), RevisionMonotonic())

__all__ = [
    "INVARIANTS",
    "GatherComplete",
    "NoDoubleAllocation",
    "QuiescentAgreement",
    "RevisionMonotonic",
]
