"""Where DeallocationRequested lives: in the claim status, or in a separate PodScheduling object."""

from __future__ import annotations

VARIANTS: dict[str, tuple[bool, str]] = {
    "pod-scheduling-flag": (
        False,
        "DeallocationRequested moved into PodScheduling: setting it does not touch the claim, "
        "so a pod can still be added to ReservedFor of a claim being deallocated (racy)",
    ),
    "claim-status-flag": (
        True,
        "DeallocationRequested in the claim status, updated atomically with ReservedFor "
        "(resourceVersion check): no new users once it is set (correct)",
    ),
}

RACY = ("pod-scheduling-flag",)
CORRECT = ("claim-status-flag",)
