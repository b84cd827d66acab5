"""What the rings lost, per worker, from the records kept and the schedule tape."""

from __future__ import annotations

from shmstress.analysis.ring_loss import RingLoss, ring_losses
from shmstress.core.trace import Label, Record, Recording, Step

# worker 1 took points 0, 2, 5 and 7; worker 0 the others
TAPE = tuple(Step(1 if seq in (0, 2, 5, 7) else 0, "p") for seq in range(9))


def _recording(
    kept: list[tuple[int, int, int]], lost: dict[int, int], tape_lost: int = 0
) -> Recording:
    """A recording that kept the (worker, seq, sub) records ``kept`` and lost ``lost``."""
    records = [Record(seq, 0, worker, 0, (), sub) for worker, seq, sub in kept]
    return Recording(
        labels=(Label("p", "f.py", 1),),
        records=tuple(r for r in records if not r.sub),
        ring_lost=lost, steps=TAPE, tape_lost=tape_lost, mono0_ns=0, wall0_ns=0,
        logs=tuple(r for r in records if r.sub),
    )


def test_nothing_lost_is_no_loss() -> None:
    assert ring_losses(_recording([(1, 0, 0)], {})) == ()


def test_a_worker_lost_its_points_before_its_first_kept_one() -> None:
    # worker 1 kept point 5 on: it lost points 0 and 2, the tape says; 3 and 4 were worker 0's
    recording = _recording([(0, 1, 0), (1, 5, 0), (1, 5, 1), (1, 7, 0)], {1: 3})
    assert ring_losses(recording) == (RingLoss(1, 3, 2, 2),)


def test_a_kept_log_call_whose_point_was_lost_ends_the_loss_at_that_point() -> None:
    recording = _recording([(1, 5, 2), (1, 7, 0)], {1: 4})
    assert ring_losses(recording) == (RingLoss(1, 4, 3, 5),)


def test_a_worker_that_kept_nothing_lost_every_point_it_took() -> None:
    assert ring_losses(_recording([(0, 8, 0)], {1: 9})) == (RingLoss(1, 9, 4, 7),)


def test_past_the_end_of_the_tape_the_loss_reaches_the_last_point() -> None:
    # the tape kept 9 of 12 points: whose the last three were is unknown
    assert ring_losses(_recording([(0, 8, 0)], {1: 9}, tape_lost=3)) == (RingLoss(1, 9, 4, 11),)


def test_log_calls_before_a_workers_first_point_are_a_loss_before_point_zero() -> None:
    assert ring_losses(_recording([(1, 0, 0)], {1: 2})) == (RingLoss(1, 2, 0, -1),)
