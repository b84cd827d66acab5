"""The GPU assignments tracker's invariants, one module each."""

from tracker.gpu_assignments.invariants.assignment_found import AssignmentFound
from tracker.gpu_assignments.invariants.no_stale_assignment import NoStaleAssignment

INVARIANTS = (AssignmentFound(), NoStaleAssignment())

__all__ = ["INVARIANTS", "AssignmentFound", "NoStaleAssignment"]
