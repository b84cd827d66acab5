"""The resource manager's assignments: pod -> the card GetPreferredAllocation chose for it.

Upstream keeps a map from pod key to per-container details under
``cleanupMutex``; here one slot per pod holds the generation of the pod the
entry belongs to (NONE when absent) and the card. Every access is under the
cleanup mutex. The ghost arrays remember who removed an entry last, so a
violation can name the cleanup that did it; they are never read by the
system under test.
"""

from __future__ import annotations

import numpy as np

from harness.locks import InstrumentedLock
from harness.shm import Arena
from tracker.gpu_assignments.names import NONE


class Assignments:
    def __init__(self, arena: Arena, mutex: InstrumentedLock, pods: int) -> None:
        self.mutex = mutex
        self.generation = arena.array("gpu.assignments.generation", pods, NONE)
        self.card = arena.array("gpu.assignments.card", pods, NONE)
        self.removed_by = arena.array("gpu.ghost.removed_by", pods, NONE)

    def store(self, slot: int, generation: int, card: int) -> None:
        with self.mutex.held("Storing container assignment", pod=slot, card=card):
            self.generation.mv[slot] = generation
            self.card.mv[slot] = card

    def lookup(self, slot: int, generation: int) -> int:
        """The card stored for this incarnation of the pod, or NONE."""
        with self.mutex.held("Looking up container assignment", pod=slot):
            if self.generation.mv[slot] != generation:
                return NONE
            return int(self.card.mv[slot])

    def prune(self, keep: np.ndarray, cleaner: int) -> np.ndarray:
        """Remove every entry whose pod incarnation is not in ``keep``; the mutex must be held."""
        gen = self.generation.np
        doomed = np.flatnonzero((gen != NONE) & (gen != keep))
        for slot in doomed:
            self.generation.mv[slot] = NONE
            self.card.mv[slot] = NONE
            self.removed_by.mv[slot] = cleaner
        return doomed

    def held_for(self, slot: int, generation: int) -> bool:
        """Is there an entry for this incarnation? The mutex must be held (or all at rest)."""
        return bool(self.generation.mv[slot] == generation)
