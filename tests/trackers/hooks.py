"""Trackers that exercise the plugin API's hooks and declarations (loaded by path)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from shmstress.api import Invariant, Phase, RoleSpec, Setup, Tracker, Workers

HOOKS_FILE = "SHMSTRESS_TEST_HOOKS"
"""Environment variable: the file the hooks append their names to (state the harness does
not own, as a library's own segment would be)."""


class _Never(Invariant):
    name = "never"
    summary = "never broken"

    def render(self, fields: Mapping[str, int], workers: Workers,
               params: Mapping[str, int]) -> str:
        return "broken"


class _Producer:
    """Makes ``steps`` points, in any phase, then finishes."""

    def __init__(self, tracker: Ordered, index: int) -> None:
        self.t = tracker
        self.left = tracker.steps

    def step(self, phase: Phase) -> bool:
        if self.left == 0:
            return False
        self.left -= 1
        with self.t.lock.held("produce"):
            self.t.produced.mv[0] += 1
        return True


class _Consumer:
    """Notes every phase it is handed (in a ghost array), and finishes at STOP."""

    def __init__(self, tracker: Ordered, index: int) -> None:
        self.t = tracker

    def step(self, phase: Phase) -> bool:
        with self.t.lock.held("consume", produced=int(self.t.produced.mv[0])):
            self.t.seen.mv[int(phase)] += 1
            if phase is Phase.STOP:
                self.t.done_at.mv[0] = self.t.produced.mv[0]
        return phase is not Phase.STOP


class Ordered(Tracker):
    """The consumer stops after the producer: it sees DRAIN until every producer finished."""

    name: ClassVar[str] = "ordered"
    summary: ClassVar[str] = "a consumer that stops after its producers"
    variants: ClassVar[Mapping[str, str]] = {"only": "the only variant"}
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "producer": RoleSpec(_Producer, "makes points, then finishes"),
        "consumer": RoleSpec(_Consumer, "stops after the producers", stops_after=("producer",)),
    }
    invariants: ClassVar[tuple[Invariant, ...]] = (_Never(),)
    steps: ClassVar[int] = 5

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.lock = setup.lock("queue")
        self.produced = setup.array("ordered.produced", 1)
        self.seen = setup.ghost.array("ordered.seen", 3)
        self.done_at = setup.ghost.array("ordered.done_at", 1, -1)


class Hooked(Ordered):
    """Appends ``reset`` and ``teardown`` to the file ``$SHMSTRESS_TEST_HOOKS`` names."""

    name: ClassVar[str] = "hooked"

    def _note(self, what: str) -> None:
        with Path(os.environ[HOOKS_FILE]).open("a") as out:
            out.write(f"{what} {os.getpid()}\n")

    def reset(self) -> None:
        self._note("reset")

    def teardown(self) -> None:
        self._note("teardown")


class ResetRaises(Ordered):
    name: ClassVar[str] = "reset-raises"

    def reset(self) -> None:
        raise RuntimeError("the library's segment is gone")
