"""Names of pods and cards as the device plugin's logs spell them."""

from __future__ import annotations

from shmstress.api import NONE

__all__ = ["NAMESPACE", "NONE", "card", "pod"]

NAMESPACE = "default"


def pod(slot: int, generation: int) -> str:
    """A pod slot is reused by later incarnations; the generation makes each name unique."""
    if slot == NONE:
        return "<no pod>"
    return f"{NAMESPACE}/gpu-pod-{slot}-{generation}"


def card(index: int) -> str:
    return "<none>" if index == NONE else f"card{index}"
