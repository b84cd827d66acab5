"""What the workers' rings lost: for each worker that wrapped, the point its loss ends at.

A ring overwrites its oldest records, so what a worker lost is a prefix of
what it recorded: everything before its first record still there. Its lost
points are still on the schedule tape (worker and label, no fields), so the
tape says exactly which points those were and the last of them; the log calls
a worker made are stamped with its latest point, so the lost ones belong to
those points. Anything the recording says about an object *after* the last
point another worker lost is certain; anything older may have been changed by
a record that is gone, and an explanation has to say so rather than state it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.core.trace import Recording


@dataclass(frozen=True)
class RingLoss:
    """One worker's records overwritten in its ring: its first ``points`` points (as many as
    the schedule tape knows of) with their log calls, the last of them at point ``through``
    (-1: only log calls made before its first point)."""

    worker: int
    slots: int  # ring slots lost, as the recorder counted them
    points: int
    through: int


def ring_losses(recording: Recording) -> tuple[RingLoss, ...]:
    """Each wrapped worker's loss, by worker id; () when every ring kept everything."""
    if not recording.ring_lost:
        return ()
    kept: dict[int, tuple[int, int]] = {}  # worker -> (seq, sub) of its first record kept
    for record in (*recording.records, *recording.logs):
        if record.worker in recording.ring_lost:
            at = (record.seq, record.sub)
            kept[record.worker] = min(kept.get(record.worker, at), at)
    tape = recording.steps
    last_point = len(tape) + recording.tape_lost - 1
    # the last point each worker may have lost: the one before its first record kept, or,
    # when that record is a log call, the point it follows (its own record is gone)
    bounds = {
        worker: last_point if worker not in kept
        else kept[worker][0] - (0 if kept[worker][1] else 1)
        for worker in recording.ring_lost
    }
    lost_points: dict[int, list[int]] = {worker: [] for worker in bounds}
    for seq in range(min(len(tape), max(bounds.values()) + 1)):
        worker = tape[seq].worker
        if worker in bounds and seq <= bounds[worker]:
            lost_points[worker].append(seq)
    return tuple(
        RingLoss(
            worker, slots, len(lost_points[worker]),
            # past the tape's end which points were the worker's is unknown: the bound holds
            bounds[worker] if bounds[worker] >= len(tape)
            else (lost_points[worker] or [-1])[-1],
        )
        for worker, slots in sorted(recording.ring_lost.items())
    )
