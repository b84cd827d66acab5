"""No progress in plain code: the probe of ``controlled.progress``, on plain processes.

Plain code keeps its shared state in objects shmstress does not own (a
``Value``, an ``Array``, shared memory), so the probe cannot compare that state.
It reads the steps instead: every access to shared state is a point whose
label says what it does. A step *changes nothing* when it reads (``read``,
``check``), pauses (``sleep``, ``yield``), waits (a timed ``wait``, ``join``),
or takes or gives back a lock (a lock's owner is the harness's state, not the
program's: a spin that locks to look is still a spin). Any other step (a write,
a ``set``, a ``notify``, a semaphore's acquire or release, a process started, a
container used by --trace) counts as progress, even if it writes what was
already there: the probe errs towards "only long", never towards a false
failure. Processes that finish count as progress too.

Limits: shared memory the code touches without a point (no --trace over a
numpy array) is invisible: a spin that makes progress only through it would
be judged stuck. The probe gives every runnable process ``PROBE_ROUNDS``
turns at least; a local wait that goes round its loop longer than that reads
as no progress.
"""

from __future__ import annotations

from collections.abc import Container

READS = ("read ", "check ", "wait on ", "wait for ", "join ", "wake on ", "sleep", "yield")
"""Label prefixes of steps that read, pause or wait: they change nothing."""
LOCKING = ("try to acquire ", "acquire ", "release ")
"""...and of the steps that take or give back a lock (nothing, for a lock; not a semaphore)."""


def inert(label: str, locks: Container[str]) -> bool:
    """Does a step with this label change nothing of the program's shared state?
    ``locks``: the names of the scenario's locks (``acquire sem`` is no lock's)."""
    if label.startswith(READS):
        return True
    for prefix in LOCKING:
        if label.startswith(prefix):
            return label[len(prefix):] in locks
    return False
