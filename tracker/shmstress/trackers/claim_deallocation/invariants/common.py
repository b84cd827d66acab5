"""What the two race invariants share: a violation about one claim and one pod, seen by one
worker, whose operation began at ``since`` (the read of the flag or of the claim)."""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.api import Scope
from shmstress.trackers.claim_deallocation.names import NO_ID


def reserve_scope(fields: Mapping[str, int]) -> Scope:
    """The claim and the pod, the worker that saw it, and where its read began (if known)."""
    since = fields["since"]
    return Scope(subjects=(("claim", fields["claim"]), ("pod", fields["pod"])),
                 worker=fields["worker"], start=None if since == NO_ID else since)
