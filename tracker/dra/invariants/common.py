"""Helpers the DRA invariants share for naming things in messages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.tracker_api import WorkerInfo
from tracker.dra.names import Naming


def naming(params: Mapping[str, int]) -> Naming:
    return Naming(params["nodes"], params["devices-per-node"])


def worker_name(worker: int, workers: Sequence[WorkerInfo]) -> str:
    if 0 <= worker < len(workers):
        return workers[worker].describe()
    return f"worker {worker}"
