"""Whether a parked process can take its point now: one rule, asked by both sides.

The coordinator asks it for every parked process to know who is runnable; a
process asks it for itself to know whether it may go on under its lease.
"""

from __future__ import annotations

from shmstress.plain.board import (
    G_ABORT,
    NOBODY,
    O_BROKEN,
    O_COUNT,
    O_GENERATION,
    O_KIND,
    O_OWNER,
    O_STRIDE,
    P_ARG,
    P_NOTIFIED,
    P_OBJ,
    P_STATE,
    P_STRIDE,
    P_TIMED,
    P_WAIT,
    Board,
    Kind,
    State,
    Wait,
)


def wait_over(board: Board, slot: int, wait: int, obj: int, arg: int) -> bool:
    """Is what ``slot`` waits for (``wait`` on ``obj`` with ``arg``) there now?"""
    if wait == Wait.NOTHING:
        return True
    objects = board.objects.mv
    base = obj * O_STRIDE
    if wait == Wait.LOCK:
        owner = objects[base + O_OWNER]
        return owner == NOBODY or (owner == slot and objects[base + O_KIND] == Kind.RLOCK)
    if wait == Wait.SEMAPHORE:
        return objects[base + O_COUNT] > 0
    if wait == Wait.EVENT:
        return objects[base + O_COUNT] != 0
    if wait == Wait.NOTIFY:
        return board.slots.mv[slot * P_STRIDE + P_NOTIFIED] != 0
    if wait == Wait.BARRIER:
        return objects[base + O_GENERATION] != arg or objects[base + O_BROKEN] != 0
    if wait == Wait.JOIN:
        return board.slots.mv[obj * P_STRIDE + P_STATE] == State.FINISHED
    raise AssertionError(f"unknown wait {wait}")


def can_go(board: Board, slot: int) -> bool:
    """Can the parked process in ``slot`` take its point (its wait is over or may time out)?"""
    slots = board.slots.mv
    base = slot * P_STRIDE
    if slots[base + P_TIMED] or board.globals.mv[G_ABORT]:
        return True
    return wait_over(board, slot, slots[base + P_WAIT], slots[base + P_OBJ], slots[base + P_ARG])
