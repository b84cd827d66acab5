"""What each step of a plain-code execution touched, for partial-order reduction.

Plain code's points are the operations themselves (``plain.sync``), so a step's
label says what it did and to which object: ``read counts[]`` with the index the
step recorded, ``acquire lock_a``, ``notify not_empty``, ``start increment``.
This module turns those words into ``core.access`` terms. A label it does not
know, or an operation whose effects reach further than its object (a condition's
wait releases a lock it does not name; a barrier; ``--trace``'s ``use``; a kill),
stays undeclared, which conflicts with every other step: a reduced search never
takes for independent what it cannot tell is.

A write carries the value it stored (``_valued``): writers that all store one value
commute with each other (a reader still conflicts with each of them).

Process steps: ``start X`` writes the new process's object, which its first step
reads, so a process's steps come after its start; a process's last step writes
its exit, which ``join X`` and ``check on X`` read.
"""

from __future__ import annotations

from collections.abc import Sequence

from shmstress.core.access import EVERY, LOCK, Access, Footprint
from shmstress.plain.outcome import PlainStep

PROCESS = "process"
EXIT = "exit"
VALUE = "value"
EVENT = "event"
CONDITION = "condition"
SEMAPHORE_VALUE = "semaphore"

_LOCKING = ("try to acquire ", "acquire ", "release ", "take ")
_OTHER: dict[str, tuple[str, bool]] = {  # verb -> (kind, writes)
    "check ": (EVENT, False),
    "wait for ": (EVENT, False),
    "set ": (EVENT, True),
    "clear ": (EVENT, True),
    "wake on ": (CONDITION, True),
    "notify ": (CONDITION, True),
    "read the value of ": (LOCK, False),
}
_FREE = ("sleep", "yield")


class Names:
    """Object names to ids, kept for a whole session so that an object has one id in every
    execution (a search compares footprints across executions)."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}

    def id(self, name: str) -> int:
        found = self._ids.get(name)
        if found is None:
            found = self._ids[name] = len(self._ids)
        return found


def footprints(steps: Sequence[PlainStep], processes: Sequence[str],
               names: Names) -> list[Footprint]:
    """One footprint per step, in order (``core.access.Footprint``)."""
    slot_of = {name: slot for slot, name in enumerate(processes)}
    last: dict[int, int] = {}
    for index, step in enumerate(steps):
        last[step.worker] = index
    out: list[Footprint] = []
    seen: set[int] = set()
    for index, step in enumerate(steps):
        accesses = _accesses(step, slot_of, names)
        if accesses and step.has_value and accesses[0].kind != PROCESS:
            accesses = _valued(accesses, step.value)
        worker = step.worker
        if accesses is not None:
            extra: list[Access] = []
            if worker not in seen:
                extra.append(Access(PROCESS, worker, write=False))
            if last[worker] == index:
                extra.append(Access(EXIT, worker, write=True))
            if extra:
                accesses = (*accesses, *extra)
        seen.add(worker)
        out.append(Footprint(worker, accesses))
    return out


def _valued(accesses: tuple[Access, ...], value: object) -> tuple[Access, ...]:
    """A single write of one element with the value it stored: this spares a search the
    orders of writers that all store one value (SCTBench's ``reorder`` setters)."""
    access = accesses[0]
    if access.id == EVERY or len(accesses) != 1 or not access.write:
        return accesses
    return (Access(access.kind, access.id, write=True, value=value),)


def _accesses(step: PlainStep, slot_of: dict[str, int],
              names: Names) -> tuple[Access, ...] | None:
    label = step.label
    if label in _FREE or label.startswith("begin "):  # a process's first point
        return ()
    verb, _, rest = label.partition(" ")
    if verb in ("read", "write") and rest.endswith((".value", "[]")):
        write = verb == "write"
        if rest.endswith(".value"):
            return (Access(VALUE, names.id(rest[:-6]), write),)
        index = step.index if step.index >= 0 else EVERY
        return (Access(f"array {rest[:-2]}", index, write),)
    if label.startswith("start ") and isinstance(step.value, int) and step.value > 0:
        return (Access(PROCESS, step.value, write=True),)
    for prefix in ("join ", "check on "):
        if label.startswith(prefix) and label[len(prefix):] in slot_of:
            return (Access(EXIT, slot_of[label[len(prefix):]], write=False),)
    for prefix in _LOCKING:
        if label.startswith(prefix):
            name = label[len(prefix):]
            if prefix == "take ":
                if not name.endswith(" back"):
                    return None
                name = name[:-5]
            return (Access(LOCK, names.id(name), write=True),)
    for prefix, (kind, write) in _OTHER.items():
        if label.startswith(prefix):
            return (Access(kind, names.id(label[len(prefix):]), write),)
    return None
