"""Helpers the device group invariants share: names for messages, subjects for scopes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from shmstress.api import Scope, Subject
from shmstress.trackers.device_group.names import NO_ID, Naming


def naming(params: Mapping[str, int]) -> Naming:
    return Naming(params["pods-per-group"])


def device_subject(params: Mapping[str, int], node: int, device: int) -> Subject:
    """A device as the words' subject: one per (node, device), numbered node-major."""
    return ("device", node * params["devices-per-node"] + device)


def scope(subjects: Iterable[Subject], fields: Mapping[str, int]) -> Scope:
    """The violation's objects (any NO_ID left out), the worker that saw it (none at rest) and
    where its PreBind began (``since``; none if unknown)."""
    since = fields.get("since", NO_ID)
    return Scope(subjects=tuple(s for s in subjects if s[1] != NO_ID),
                 worker=None if fields["worker"] == NO_ID else fields["worker"],
                 start=None if since == NO_ID else since)
