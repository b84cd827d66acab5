"""What each step of a controlled execution touched, for strategies that observe it.

Partial-order reduction (``strategies.base.Observing``) needs, after each
execution, one ``Footprint`` per step. A step is a point plus the code after
it up to the worker's next point, and the point's label and fields are what
the tracker's words (``Words.accesses``) read to say what that code touches.
Nothing of this runs per step in the coordinator: an observed execution is
recorded (the recorder already keeps every point's label and fields), and the
one fact the recording lacks, which instrumented lock a point acquires, is
noted by each worker in a shared array indexed by step (``LockNoting``, only
while recording). After the execution, ``Footprints.build`` reads both.

A step may take nested acquires of a lock its worker already holds: no points, but
each named one is a log record after the step's point, with its own label and
fields (``core.locks``), so what the words declare for such a record is added to
the step's footprint (a lock that guards several structures then lets each say
what it touches). A log record the words do not declare adds nothing: a log call
is not an access. A step whose point the words do not declare (None) conflicts
with every step, and so does one whose record is missing (a ring that wrapped): a
search pruned by these footprints stays sound when the words say too little.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shmstress.core.access import LOCK, Access, Footprint
from shmstress.core.points import AcquireGate
from shmstress.core.shm import SharedArray
from shmstress.core.trace import Recording, Step
from shmstress.plugin.words import Words

PLUMBING = True
"""Point plumbing: ``LockNoting`` stands between a lock's acquire and the gate, and the
recorder looks past this module's frames for the tracker's call site."""

NO_LOCK = -1
STEP_LOCKS = "controlled.step-locks"
"""The shared array of the lock each step acquires (a channel array: never restored)."""


class LockNoting:
    """A controlled worker's acquire gate while recording: notes the lock a point acquires.

    ``before_acquire`` runs only for the outer acquire of an instrumented lock,
    right before its point is committed; ``after_point`` (the runtime's
    observer) writes the noted lock, or ``NO_LOCK``, at the point's step.
    """

    def __init__(self, gate: AcquireGate, step_locks: SharedArray) -> None:
        self._gate = gate
        self._log = step_locks.mv
        self._size = len(step_locks.mv)
        self._pending = NO_LOCK

    def before_acquire(self, label: str, lock: int) -> None:
        self._pending = lock
        self._gate.before_acquire(label, lock)

    def after_point(self, seq: int, worker: int, label: str, fields: dict[str, object]) -> None:
        if seq < self._size:
            self._log[seq] = self._pending
        self._pending = NO_LOCK


class Footprints:
    """The coordinator's side: one footprint per step, from a recording and the noted locks."""

    def __init__(self, words: Words, step_locks: SharedArray) -> None:
        self._words = words
        self._locks = step_locks.np
        self._declared: dict[tuple[str, tuple[tuple[str, object], ...]],
                             tuple[Access, ...] | None] = {}

    def build(self, recording: Recording, steps: Sequence[Step]) -> tuple[Footprint, ...]:
        """One footprint per step of ``steps`` (the execution's schedule), in its order."""
        by_seq = {record.seq: record for record in recording.records}
        labels = recording.labels
        nested: dict[int, list[Access]] = {}
        for log in recording.logs:
            declared = self._accesses(labels[log.label].text, log.fields)
            if declared and log.seq < len(steps) and steps[log.seq].worker == log.worker:
                nested.setdefault(log.seq, []).extend(declared)
        locks = self._locks[: len(steps)].tolist()
        out: list[Footprint] = []
        for index, step in enumerate(steps):
            record = by_seq.get(index)
            if record is None or record.worker != step.worker:
                out.append(Footprint(step.worker, None))  # lost: it may have touched anything
                continue
            accesses = self._accesses(labels[record.label].text, record.fields)
            lock = locks[index] if index < len(locks) else NO_LOCK
            if accesses is not None and lock != NO_LOCK:
                accesses = (Access(LOCK, lock, True), *accesses)
            if accesses is not None and index in nested:
                accesses = (*accesses, *nested[index])
            out.append(Footprint(step.worker, accesses))
        return tuple(out)

    def _accesses(
        self, label: str, fields: tuple[tuple[str, object], ...]
    ) -> tuple[Access, ...] | None:
        """The words' declaration, asked once per distinct (label, fields)."""
        key = (label, fields)
        try:
            return self._declared[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable field value: ask every time
            return _declared(self._words, label, dict(fields))
        found = self._declared[key] = _declared(self._words, label, dict(fields))
        return found


def _declared(words: Words, label: str, fields: Mapping[str, object]) -> tuple[Access, ...] | None:
    found = words.accesses(label, fields)
    return None if found is None else tuple(found)
