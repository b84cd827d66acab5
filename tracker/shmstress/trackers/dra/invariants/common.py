"""Helpers the DRA invariants share for naming things in messages."""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.trackers.dra.names import Naming


def naming(params: Mapping[str, int]) -> Naming:
    return Naming(params["nodes"], params["devices-per-node"])
