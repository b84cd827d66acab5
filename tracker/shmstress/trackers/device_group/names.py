"""Names of nodes, devices, groups and pods as the plugin's logs would spell them."""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.api import NO_ID

__all__ = ["NO_ID", "RESOURCE", "Naming"]

RESOURCE = "example.com/gpu"


@dataclass(frozen=True)
class Naming:
    """Device ``d`` of a node is its ``d``-th device; pod ``p`` belongs to group ``p // per``."""

    pods_per_group: int

    def group_of(self, pod: int) -> int:
        return pod // self.pods_per_group

    @staticmethod
    def node(node: int) -> str:
        return "<no node>" if node == NO_ID else f"node-{node}"

    def device(self, node: int, device: int) -> str:
        return f"{self.node(node)}/{RESOURCE}/{device}"

    @staticmethod
    def group(group: int) -> str:
        return "<no group>" if group == NO_ID else f"group-{group}"

    def pod(self, pod: int) -> str:
        if pod == NO_ID:
            return "<no pod>"
        return f"default/{self.group(self.group_of(pod))}-pod-{pod % self.pods_per_group}"
