"""A tiny tracker whose two roles take two locks; in ``inverted`` they take them in
opposite orders (a lock-order inversion that deadlocks), in ``ordered`` in the same order.
Under both locks a worker counts its round twice: in a shared counter and in its own slot;
at rest the counter must equal the rounds the workers finished."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Found, Invariant, Parameter, Phase, RoleSpec, Setup, Tracker, Workers


class _Rounds(Invariant):
    name = "rounds-counted"
    summary = "every finished round is counted once"
    fields = ("counted", "finished")

    def render(self, fields: Mapping[str, int], workers: Workers,
               params: Mapping[str, int]) -> str:
        return f"counted {fields['counted']} rounds, but the workers finished {fields['finished']}"

    def check_at_rest(self, tracker: LockOrder) -> list[Found]:
        counted, finished = int(tracker.counter.mv[0]), int(tracker.finished.np.sum())
        if counted == finished:
            return []
        return [Found(self.name, {"counted": counted, "finished": finished})]


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
        if self.rounds == self.t.hang_after and (self.me == 0 or not self.t.first_hangs_only):
            while True:  # a step that never reaches its next point
                time.sleep(0.05)
        with self.first.held(f"take {self.names[0]}"), self.second.held(f"take {self.names[1]}"):
            self.t.counter.mv[0] += 1
            self.t.finished.mv[self.me] = self.rounds + 1
        self.rounds += 1
        return True


def _forward(tracker: LockOrder, index: int) -> _Role:
    return _Role(tracker, "A", "B")


def _backward(tracker: LockOrder, index: int) -> _Role:
    return _Role(tracker, "B", "A") if tracker.variant == "inverted" else _forward(tracker, index)


class LockOrder(Tracker):
    name: ClassVar[str] = "lock-order"
    summary: ClassVar[str] = "two roles, two locks"
    variants: ClassVar[Mapping[str, str]] = {
        "inverted": "forward takes A then B, backward takes B then A (deadlocks)",
        "ordered": "both take A then B",
    }
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "forward": RoleSpec(_forward, "takes A then B"),
        "backward": RoleSpec(_backward, "takes the locks in the variant's order")}
    parameters: ClassVar[Mapping[str, Parameter]] = {
        "rounds": Parameter(2, "rounds each worker makes", minimum=1),
        "hang-after": Parameter(0, "rounds after which a worker hangs (0: never)"),
        "first-hangs-only": Parameter(0, "1: only the first worker hangs", maximum=1)}
    invariants = (_Rounds(),)

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.variant = variant
        self.runtime = setup.runtime
        self.locks = {"A": setup.lock("A"), "B": setup.lock("B")}
        self.counter = setup.array("lock_order.counter", 1)
        workers = sum(len(ids) for ids in setup.role_workers.values())
        self.finished = setup.array("lock_order.finished", max(1, workers))
        self.rounds = params["rounds"]
        self.hang_after = params["hang-after"] or -1
        self.first_hangs_only = bool(params["first-hangs-only"])
