"""The plugin API: everything a tracker imports, from this one module.

A tracker subclasses ``Tracker``; declares its ``variants``, ``roles`` (each a
``RoleSpec``), ``parameters`` and ``invariants`` (``Invariant`` subclasses);
builds its shared state in ``__init__`` from a ``Setup`` (arrays, ``Lock``s,
``Ghost`` state) and keeps ``setup.runtime``, the ``Runtime`` its roles' steps
use. ``Words`` (optional) make its logs and explanations read like the real
system's. ``LIMITS`` says how much a point, a violation and a run can hold.
A point's sequence number (what ``runtime.point`` returns) counts from 0; a message
prints ``step_number`` of it, the number every view shows (from 1).
``examples/README.md`` walks through it; ``mypy --strict`` keeps a tracker to it.
"""

from shmstress.core.access import EVERY, Access
from shmstress.core.control import Phase
from shmstress.core.locks import InstrumentedLock as Lock
from shmstress.core.runtime import NO_ID
from shmstress.core.shm import SharedArray
from shmstress.core.trace import step_number
from shmstress.core.workers import WorkerInfo as Worker
from shmstress.core.workers import Workers
from shmstress.plugin.limits import LIMITS, Limits
from shmstress.plugin.setup import Ghost, Runtime, Setup
from shmstress.plugin.tracker import (
    Found,
    Invariant,
    Parameter,
    Role,
    RoleSpec,
    Scenario,
    Tracker,
)
from shmstress.plugin.words import Effect, Fields, Raw, Scope, Subject, Words

__all__ = [
    "EVERY",
    "LIMITS",
    "NO_ID",
    "Access",
    "Effect",
    "Fields",
    "Found",
    "Ghost",
    "Invariant",
    "Limits",
    "Lock",
    "Parameter",
    "Phase",
    "Raw",
    "Role",
    "RoleSpec",
    "Runtime",
    "Scenario",
    "Scope",
    "Setup",
    "SharedArray",
    "Subject",
    "Tracker",
    "Words",
    "Worker",
    "Workers",
    "step_number",
]
