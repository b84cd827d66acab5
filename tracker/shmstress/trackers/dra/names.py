"""Names of devices, claims and pods in upstream's spelling, so logs read like the seed's."""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.api import NO_ID

__all__ = ["DRIVER", "NAMESPACE", "NO_ID", "Naming"]

DRIVER = "driver.example.com"
NAMESPACE = "shmstress"


@dataclass(frozen=True)
class Naming:
    """Device ``d`` lives on node ``d // devices_per_node``; claim ``c`` belongs to pod ``c``."""

    nodes: int
    devices_per_node: int

    def node(self, device: int) -> str:
        return f"worker-{device // self.devices_per_node}"

    def device(self, device: int) -> str:
        if device == NO_ID:
            return "<none>"
        node = self.node(device)
        return f"{DRIVER}/{node}/{node}-device-{device % self.devices_per_node:03d}"

    def claim(self, claim: int) -> str:
        return f"{NAMESPACE}/claim-{claim:04d}"

    def pod(self, claim: int) -> str:
        return f"{NAMESPACE}/my-pod-{claim:04d}"
