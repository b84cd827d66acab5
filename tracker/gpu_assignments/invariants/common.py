"""Naming workers in messages, shared by the GPU assignments invariants."""

from __future__ import annotations

from collections.abc import Sequence

from harness.tracker_api import WorkerInfo


def worker_name(worker: int, workers: Sequence[WorkerInfo]) -> str:
    if 0 <= worker < len(workers):
        return workers[worker].describe()
    return f"worker {worker}"
