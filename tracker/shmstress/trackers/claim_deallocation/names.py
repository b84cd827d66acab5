"""Names of claims and pods in the spelling of the DRA KEP discussion."""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.api import NO_ID
from shmstress.trackers.common import bits

__all__ = ["NAMESPACE", "NO_ID", "Naming"]

NAMESPACE = "default"


@dataclass(frozen=True)
class Naming:
    """Pod ``p`` uses claim ``p // pods_per_claim``: every claim is shared by that many pods."""

    pods_per_claim: int

    def claim_of(self, pod: int) -> int:
        return pod // self.pods_per_claim

    @staticmethod
    def claim(claim: int) -> str:
        return f"{NAMESPACE}/claim-{claim}"

    def pod(self, pod: int) -> str:
        if pod == NO_ID:
            return "<no pod>"
        return f"{NAMESPACE}/pod-{self.claim_of(pod)}-{pod % self.pods_per_claim}"

    def pods(self, reserved_for: int) -> list[str]:
        """The pods of a ReservedFor mask, by name."""
        return [self.pod(p) for p in bits(reserved_for)]
