"""What each step of the DRA tracker reads and writes, for partial-order reduction.

A step is a point plus the code after it up to the worker's next point, so
each entry below names what that code touches, read off the structures and
roles for every variant (the words do not know the variant: where variants
differ, the entry is their union). Most points are a lock's acquire and the
step is its critical section; the steps that reach further are noted. Under
``single-lock`` the structures' acquires nest inside one lock and are no
points: each is then a log record of the step, and the harness adds what is
declared for its label here to the step (so "lock claim tracker for ..."
itself touches nothing, and "Starting GatherAllocatedState" picks up the
reads of the gather that follow it under the one lock).

The coverage ghost (``coverage.py``) is part of what a step touches: whether
a gather missed a device depends on whether the device was covered before the
gather started, so a step that covers or uncovers a device conflicts with the
start and the end of every gather. Which device a step uncovers (the claim's
old device) is read after its point, so those writes are to every device.
The API server, the pods and the event queue are each under one lock, whose
acquire conflicts with every other acquire of it anyway: their entries are
kept simple. Labels not listed (none today) are undeclared and conflict with
every step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from shmstress.api import EVERY, NO_ID, Access

API = "api claim"  # the API server's device and resourceVersion of a claim
API_LOG = "api log"  # its resourceVersion counter, owners and event log
CACHE = "cache claim"  # the assume cache's objects of a claim
QUEUE = "cache events"  # the assume cache's event queue
IN_FLIGHT = "in-flight claim"
ALLOCATED = "allocated device"
REVISION = "allocated revision"
PODS = "pod"
COVERAGE = "coverage"  # the ghost state of gather-complete, per device

Declared = tuple[Access, ...]


def _claim(fields: Mapping[str, object], key: str = "claim") -> int:
    value = fields.get(key)
    return value if isinstance(value, int) and value != NO_ID else EVERY


def _read(kind: str, ident: int = 0) -> Access:
    return Access(kind, ident, False)


def _write(kind: str, ident: int = 0) -> Access:
    return Access(kind, ident, True)


_COVERS = _write(COVERAGE, EVERY)  # covers a device and uncovers the claim's old one


def _observed(fields: Mapping[str, object]) -> Declared:
    """The event handler's step: the old and the new device, and the revision."""
    devices = [fields.get("old"), fields.get("device")]
    found = [_write(ALLOCATED, d) for d in devices if isinstance(d, int) and d != NO_ID]
    if len(found) < sum(1 for d in devices if d is not None):  # a field that is not an id
        found = [_write(ALLOCATED, EVERY)]
    return (*found, _write(REVISION))


_BY_LABEL: Mapping[str, Callable[[Mapping[str, object]], Declared]] = {
    # gatherer: the scheduling cycle. Its lock's step reaches the pods' acquire.
    "Start scheduling cycle": lambda f: (),
    "pick pod": lambda f: (_read(PODS, EVERY),),
    # ... the candidates' read; with none, the cycle's lock is let go and the role idles
    "list assumed claims": lambda f: (_read(CACHE, EVERY),),
    # the start's sequence number is compared with when each device was covered
    "Starting GatherAllocatedState": lambda f: (_read(COVERAGE, EVERY),),
    "copy allocated devices": lambda f: (_read(ALLOCATED, EVERY), _read(REVISION)),
    "check in-flight claims": lambda f: (_read(IN_FLIGHT, EVERY),),
    "check revision": lambda f: (_read(REVISION),),
    "conflicting concurrent modification, retrying": lambda f: (),
    # the gather's check against the ghost runs in the step after its last point
    "Finished GatherAllocatedState": lambda f: (_read(COVERAGE, EVERY),),
    "Signal claim pending allocation": lambda f: (_write(IN_FLIGHT, _claim(f)), _COVERS),
    "hand pod to binder": lambda f: (_write(PODS, _claim(f)),),
    "check pending allocation": lambda f: (_read(IN_FLIGHT, _claim(f)),),
    # binder: takes a pod (with none, at STOP it reads every pod's state without a lock)
    "take pod to bind": lambda f: (_write(PODS, EVERY),),
    "Unreserve after API error": lambda f: (),
    "get claim": lambda f: (_read(API, _claim(f)),),
    "update claim status": lambda f: (_write(API, _claim(f)), _write(API_LOG)),
    "Removed in-flight claim": lambda f: (_write(IN_FLIGHT, _claim(f)), _COVERS),
    "Attempting to bind pod to node": lambda f: (),
    "pod state": lambda f: (_write(PODS, _claim(f)),),
    # informer: the watch (with nothing new, at STOP it reads the log's length unlocked)
    "watch claims": lambda f: (_read(API_LOG),),
    "list claims": lambda f: (_read(API, EVERY), _read(API_LOG)),
    # the assume cache: each write queues an event and moves the coverage
    "informer update": lambda f: (_write(CACHE, _claim(f)), _write(QUEUE), _COVERS),
    "Claim stored in assume cache": lambda f: (_write(CACHE, _claim(f)), _write(QUEUE),
                                               _COVERS),
    "restore claim": lambda f: (_write(CACHE, _claim(f)), _write(QUEUE), _COVERS),
    "get assumed claim": lambda f: (_read(CACHE, _claim(f)),),
    "deliver queued events": lambda f: (),
    "pop event": lambda f: (_write(QUEUE),),
    "Observed device allocation": _observed,
    # single-lock: an operation's lock; its structures' nested acquires say the rest
    "lock claim tracker for GatherAllocatedState": lambda f: (),
    "lock claim tracker for SignalClaimPendingAllocation": lambda f: (),
    "lock claim tracker for RemoveClaimPendingAllocation": lambda f: (),
    "lock claim tracker for AssumeClaimAfterAPICall": lambda f: (),
    "lock claim tracker for informer update": lambda f: (),
    "lock claim tracker for AssumedClaimRestore": lambda f: (),
}

LABELS = frozenset(_BY_LABEL)


def accesses(label: str, fields: Mapping[str, object]) -> Declared | None:
    """What the step that begins at point ``label`` touches; None for a label not listed."""
    found = _BY_LABEL.get(label)
    return None if found is None else found(fields)
