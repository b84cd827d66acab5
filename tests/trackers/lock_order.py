"""A tiny tracker whose two roles take two locks; in ``inverted`` they take them in
opposite orders (a lock-order inversion that deadlocks), in ``ordered`` in the same order.
Under both locks a worker counts its round twice: in a shared counter and in its own slot;
at rest the counter must equal the rounds the workers finished."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import ClassVar

from shmstress.api import Arena, FoundViolation, Parameter, Phase, Role, Runtime, WorkerInfo


class _Rounds:
    name = "rounds-counted"
    summary = "every finished round is counted once"
    fields = ("counted", "finished")

    def render(self, fields: Mapping[str, int], workers: Sequence[WorkerInfo],
               params: Mapping[str, int]) -> str:
        return f"counted {fields['counted']} rounds, but the workers finished {fields['finished']}"


class _Role:
    def __init__(self, tracker: LockOrder, first: str, second: str) -> None:
        self.t = tracker
        self.first = tracker.locks[first]
        self.second = tracker.locks[second]
        self.names = (first, second)
        self.me = tracker.runtime.worker_id
        self.rounds = 0

    def step(self, phase: Phase) -> bool:
        if phase >= Phase.STOP or self.rounds >= self.t.rounds:
            return False
        if self.rounds == self.t.hang_after:
            while True:  # a step that never reaches its next point
                time.sleep(0.05)
        with self.first.held(f"take {self.names[0]}"), self.second.held(f"take {self.names[1]}"):
            self.t.counter.mv[0] += 1
            self.t.finished.mv[self.me] = self.rounds + 1
        self.rounds += 1
        return True


class LockOrder:
    name: ClassVar[str] = "lock-order"
    summary: ClassVar[str] = "two roles, two locks"
    variants: ClassVar[Mapping[str, str]] = {
        "inverted": "forward takes A then B, backward takes B then A (deadlocks)",
        "ordered": "both take A then B",
    }
    roles: ClassVar[Mapping[str, str]] = {"forward": "takes A then B",
                                          "backward": "takes the locks in the variant's order"}
    default_counts: ClassVar[Mapping[str, int]] = {"forward": 1, "backward": 1}
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "rounds": Parameter(2, "rounds each worker makes", minimum=1),
        "hang-after": Parameter(0, "rounds after which a worker hangs (0: never)")}
    invariants = (_Rounds(),)

    def __init__(self, runtime: Runtime, arena: Arena, variant: str,
                 params: Mapping[str, int]) -> None:
        self.variant = variant
        self.runtime = runtime
        self.locks = {"A": runtime.lock("A"), "B": runtime.lock("B")}
        self.counter = arena.array("lock_order.counter", 1)
        workers = sum(len(ids) for ids in runtime.role_workers.values())
        self.finished = arena.array("lock_order.finished", max(1, workers))
        self.rounds = params["rounds"]
        self.hang_after = params["hang-after"] or -1

    def role(self, name: str, index: int) -> Role:
        if name == "backward" and self.variant == "inverted":
            return _Role(self, "B", "A")
        return _Role(self, "A", "B")

    def drained(self) -> bool:
        return True

    def final_violations(self) -> list[FoundViolation]:
        counted, finished = int(self.counter.mv[0]), int(self.finished.np.sum())
        if counted == finished:
            return []
        return [FoundViolation("rounds-counted", {"counted": counted, "finished": finished})]
