"""Who the workers of a run are: their ids, roles and numbers, and how messages name them.

Worker ids number the workers role by role in the tracker's role order; every
part of the harness (runs, controlled sessions, probes, replays) numbers them
here, so a bundle's recorded steps name the same workers wherever it replays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkerInfo:
    """Who a worker is, for messages: ``clerk #1 (pid 18778)``."""

    worker_id: int
    role: str
    index: int
    pid: int = 0

    def describe(self) -> str:
        pid = f" (pid {self.pid})" if self.pid else ""
        return f"{self.role} #{self.index + 1}{pid}"


def number_workers(roles: Iterable[str], counts: Mapping[str, int]) -> tuple[WorkerInfo, ...]:
    """One WorkerInfo per worker: ids 0.. role by role in ``roles`` order, indices per role."""
    workers: list[WorkerInfo] = []
    for role in roles:
        for index in range(counts.get(role, 0)):
            workers.append(WorkerInfo(len(workers), role, index))
    return tuple(workers)


def describe_worker(worker: int, workers: Sequence[WorkerInfo]) -> str:
    """``clerk #2 (pid 18779)`` for a worker id from a violation's fields; an id the run does
    not know (a missing field's -1) reads ``worker -1`` rather than raising in ``render``."""
    if 0 <= worker < len(workers):
        return workers[worker].describe()
    return f"worker {worker}"


class Workers(tuple[WorkerInfo, ...]):
    """The workers of a run, numbered by id; ``describe`` names one for a message."""

    __slots__ = ()

    def describe(self, worker: int) -> str:
        """``clerk #2 (pid 18779)`` for a worker id from a violation's fields; an id the run
        does not know (a missing field's -1) reads ``worker -1`` rather than raising."""
        return describe_worker(worker, self)
