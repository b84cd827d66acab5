"""The resource manager's assignments: pod -> the card GetPreferredAllocation chose for it.

Upstream keeps a map from pod key to per-container details under
``cleanupMutex``; here one slot per pod holds the generation of the pod the
entry belongs to (NO_ID when absent) and the card. Every access is under the
cleanup mutex. The ghost arrays remember which cleanup pass removed an entry
last (its worker and the point the pass began at), so a violation can name
it and its explanation can start there; the system under test never reads
them.
"""

from __future__ import annotations

import numpy as np

from shmstress.api import Lock, Setup
from shmstress.trackers.gpu_assignments.names import NO_ID


class Assignments:
    def __init__(self, setup: Setup, mutex: Lock, pods: int) -> None:
        self.mutex = mutex
        self.generation = setup.array("gpu.assignments.generation", pods, NO_ID)
        self.card = setup.array("gpu.assignments.card", pods, NO_ID)
        self.removed_by = setup.ghost.array("gpu.removed_by", pods, NO_ID)
        self.removed_since = setup.ghost.array("gpu.removed_since", pods, NO_ID)

    def store(self, slot: int, generation: int, card: int) -> None:
        with self.mutex.held("Storing container assignment", pod=slot, generation=generation,
                             card=card):
            self.generation.mv[slot] = generation
            self.card.mv[slot] = card

    def lookup(self, slot: int, generation: int) -> int:
        """The card stored for this incarnation of the pod, or NO_ID."""
        with self.mutex.held("Looking up container assignment", pod=slot,
                             generation=generation):
            if self.generation.mv[slot] != generation:
                return NO_ID
            return int(self.card.mv[slot])

    def stale(self, keep: np.ndarray) -> list[tuple[int, int]]:
        """(slot, generation) of every entry whose pod incarnation is not in ``keep``: what the
        cleanup removes. The mutex must be held."""
        gen = self.generation.np
        doomed = np.flatnonzero((gen != NO_ID) & (gen != keep))
        return [(int(slot), int(gen[slot])) for slot in doomed]

    def remove(self, slot: int, cleaner: int, since: int) -> None:
        """Drop one entry; the mutex must be held (and the removal's point made)."""
        self.generation.mv[slot] = NO_ID
        self.card.mv[slot] = NO_ID
        self.removed_by.mv[slot] = cleaner
        self.removed_since.mv[slot] = since

    def held_for(self, slot: int, generation: int) -> bool:
        """Is there an entry for this incarnation? The mutex must be held (or all at rest)."""
        return bool(self.generation.mv[slot] == generation)
