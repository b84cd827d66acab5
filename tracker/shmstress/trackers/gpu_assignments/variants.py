"""The cleanup's pod list: which phases it holds, and whether it is taken under the mutex."""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.trackers.gpu_assignments.pod_store import PodPhase

RUNNING_AND_PENDING = (PodPhase.RUNNING, PodPhase.PENDING)


@dataclass(frozen=True)
class Traits:
    """What a variant's cleanup lists, and how: while holding the cleanup mutex, in one
    consistent list of every phase (the fix), or before taking it, one API call per phase
    (upstream)."""

    phases: tuple[PodPhase, ...]
    list_under_mutex: bool


VARIANTS: dict[str, tuple[Traits, str]] = {
    "running-only": (
        Traits((PodPhase.RUNNING,), list_under_mutex=False),
        "cleanup keeps only running pods, so it drops the assignment of a pod between "
        "GetPreferredAllocation and Allocate (racy)",
    ),
    "list-before-lock": (
        Traits(RUNNING_AND_PENDING, list_under_mutex=False),
        "cleanup lists running, then pending pods as upstream does, before taking the cleanup "
        "mutex: a pod created in between loses its assignment (racy)",
    ),
    "fixed": (
        Traits(RUNNING_AND_PENDING, list_under_mutex=True),
        "cleanup lists running and pending pods in one consistent list while holding the "
        "cleanup mutex (correct)",
    ),
    "mutant-all-phases": (
        Traits((*RUNNING_AND_PENDING, PodPhase.TERMINATING), list_under_mutex=True),
        "mutation: the cleanup's list has no phase selector, so deleted (terminating) pods "
        "keep their assignments (buggy)",
    ),
}

RACY = ("running-only", "list-before-lock")
CORRECT = ("fixed",)
MUTANTS = ("mutant-all-phases",)
