"""A ResourceClaim shared by pods, deallocated on request while pods try to reserve it."""
