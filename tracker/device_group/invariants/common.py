"""Naming devices, groups and workers in messages, shared by the device group invariants."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.tracker_api import WorkerInfo
from tracker.device_group.names import Naming


def naming(params: Mapping[str, int]) -> Naming:
    return Naming(params["pods-per-group"])


def worker_name(worker: int, workers: Sequence[WorkerInfo]) -> str:
    if 0 <= worker < len(workers):
        return workers[worker].describe()
    return f"worker {worker}"
