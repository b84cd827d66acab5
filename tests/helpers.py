"""Shared test scaffolding: a gate that injects a hand-written interleaving at one point."""

from __future__ import annotations

from collections.abc import Callable

from harness.runtime import Runtime


class InjectAt:
    """When ``worker`` reaches point ``label`` (the ``nth`` time), run ``action`` there, once.

    The action runs other workers' steps in the middle of this worker's
    operation: a deterministic reproduction of one preemption.
    """

    def __init__(
        self, runtime: Runtime, worker: int, label: str, action: Callable[[], None], nth: int = 1
    ) -> None:
        self.runtime = runtime
        self.worker = worker
        self.label = label
        self.action = action
        self.remaining = nth
        self.fired = False
        self.inner: InjectAt | None = None

    def before_point(self, label: str) -> None:
        if self.inner is not None:
            self.inner.before_point(label)
        if self.fired or self.runtime.worker_id != self.worker or label != self.label:
            return
        self.remaining -= 1
        if self.remaining:
            return
        self.fired = True
        me = self.runtime.worker_id
        self.action()
        self.runtime.become(me)
