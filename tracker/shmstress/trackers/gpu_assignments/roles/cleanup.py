"""Cleanup: the resource manager's periodic goroutine, one pass per step.

Upstream waits two minutes between passes; here a pass ends in a yield (the
ticker's wait), so the other roles run between passes in controlled mode
too. Once the kubelets and the controller have finished, two more passes
run, so that at rest every deleted pod has had its two cleanups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shmstress.api import Phase

if TYPE_CHECKING:
    from shmstress.trackers.gpu_assignments.tracker import GpuAssignmentsTracker

FINAL_PASSES = 2


class Cleanup:
    def __init__(self, tracker: GpuAssignmentsTracker, index: int) -> None:
        self._t = tracker
        self._final_passes = 0

    def step(self, phase: Phase) -> bool:
        t = self._t
        if phase is Phase.STOP:  # STOP: the kubelets and the controller are done
            if self._final_passes >= FINAL_PASSES:
                return False
            self._final_passes += 1
        t.manager.cleanup_pass()
        return t.runtime.idle()
