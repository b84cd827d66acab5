"""Names of pods and cards as the device plugin's logs spell them."""

from __future__ import annotations

from shmstress.api import NO_ID

__all__ = ["NAMESPACE", "NO_ID", "card", "pod"]

NAMESPACE = "default"


def pod(slot: int, generation: int) -> str:
    """A pod slot is reused by later incarnations; the generation makes each name unique."""
    if slot == NO_ID:
        return "<no pod>"
    return f"{NAMESPACE}/gpu-pod-{slot}-{generation}"


def card(index: int) -> str:
    return "<none>" if index == NO_ID else f"card{index}"
