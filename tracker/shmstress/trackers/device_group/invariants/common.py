"""Helpers the device group invariants share: names for messages, subjects for scopes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from shmstress.api import Scope, Subject
from shmstress.trackers.device_group.names import NONE, Naming


def naming(params: Mapping[str, int]) -> Naming:
    return Naming(params["pods-per-group"])


def device_subject(params: Mapping[str, int], node: int, device: int) -> Subject:
    """A device as the words' subject: one per (node, device), numbered node-major."""
    return ("device", node * params["devices-per-node"] + device)


def scope(subjects: Iterable[Subject], fields: Mapping[str, int]) -> Scope:
    """The violation's objects (any NONE left out), the worker that saw it (none at rest) and
    where its PreBind began (``since``; none if unknown)."""
    since = fields.get("since", NONE)
    return Scope(subjects=tuple(s for s in subjects if s[1] != NONE),
                 worker=None if fields["worker"] == NONE else fields["worker"],
                 start=None if since == NONE else since)
