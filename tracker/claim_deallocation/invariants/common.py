"""Naming claims, pods and workers in messages, shared by the claim deallocation invariants."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.tracker_api import WorkerInfo
from tracker.claim_deallocation.names import Naming


def naming(params: Mapping[str, int]) -> Naming:
    return Naming(params["pods-per-claim"])


def worker_name(worker: int, workers: Sequence[WorkerInfo]) -> str:
    if 0 <= worker < len(workers):
        return workers[worker].describe()
    return f"worker {worker}"
