"""The GPU assignments tracker's invariants, one module each."""

from shmstress.trackers.gpu_assignments.invariants.assignment_found import AssignmentFound
from shmstress.trackers.gpu_assignments.invariants.no_stale_assignment import NoStaleAssignment

INVARIANTS = (AssignmentFound(), NoStaleAssignment())

__all__ = ["INVARIANTS", "AssignmentFound", "NoStaleAssignment"]
