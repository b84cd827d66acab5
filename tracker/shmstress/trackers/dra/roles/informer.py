"""Informer: watches the API server's event log in order and feeds the assume cache.

Several informers each watch the whole log with their own cursor, like
duplicate watches or resyncs: the cache's newer-than rule must absorb the
stale deliveries, and each informer is one more caller delivering events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shmstress.api import Phase
from shmstress.trackers.dra.api_server import Relist

if TYPE_CHECKING:
    from shmstress.trackers.dra.tracker import DraTracker

# Phase members as module constants: ``Phase.RUN`` is a class attribute lookup through the
# enum's metaclass, about half a microsecond, and every step of this role compares.
_STOP = Phase.STOP


class Informer:
    def __init__(self, tracker: DraTracker, index: int) -> None:
        self._t = tracker
        self._cursor = 0

    def step(self, phase: Phase) -> bool:
        t = self._t
        event = t.api.watch(self._cursor)
        if isinstance(event, Relist):
            items, self._cursor = t.api.list_claims()
            for claim, device, rv in items:
                t.claims.informer_update(claim, device, rv)
            return True
        if event is not None:
            t.claims.informer_update(event.claim, event.device, event.resource_version)
            self._cursor += 1
            return True
        if phase is _STOP and self._cursor >= t.api.events_appended:  # binders are done
            return False
        return t.runtime.idle()
