"""The cleanup's pod list: which phases it holds, and whether it is taken under the mutex."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Traits:
    """What a variant's cleanup keeps: running pods, pending pods, terminating pods."""

    keeps_pending: bool
    list_under_mutex: bool
    keeps_terminating: bool = False


VARIANTS: dict[str, tuple[Traits, str]] = {
    "running-only": (
        Traits(keeps_pending=False, list_under_mutex=False),
        "cleanup keeps only running pods, so it drops the assignment of a pod between "
        "GetPreferredAllocation and Allocate (racy)",
    ),
    "list-before-lock": (
        Traits(keeps_pending=True, list_under_mutex=False),
        "cleanup keeps running and pending pods, but lists them before taking the cleanup "
        "mutex: a pod created in between loses its assignment (racy)",
    ),
    "fixed": (
        Traits(keeps_pending=True, list_under_mutex=True),
        "cleanup lists running and pending pods while holding the cleanup mutex (correct)",
    ),
    "mutant-all-phases": (
        Traits(keeps_pending=True, list_under_mutex=True, keeps_terminating=True),
        "mutation: the cleanup's list has no phase selector, so deleted (terminating) pods "
        "keep their assignments (buggy)",
    ),
}

RACY = ("running-only", "list-before-lock")
CORRECT = ("fixed",)
MUTANTS = ("mutant-all-phases",)
