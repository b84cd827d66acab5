"""Whether a parked process can take its point now: one rule, asked by both sides.

The coordinator asks it for every parked process to know who is runnable; a
process asks it for itself to know whether it may go on under its lease.
"""

from __future__ import annotations

from shmstress.plain.board import (
    G_ABORT,
    G_SLOTS,
    HANDLE_BITS,
    M_NEXT,
    M_SENDER,
    M_SIZE,
    NOBODY,
    O_BROKEN,
    O_COUNT,
    O_GENERATION,
    O_HEAD,
    O_KIND,
    O_LIMIT,
    O_OWNER,
    O_PIPE_BYTES,
    O_RECEIVERS,
    O_SENDERS,
    O_STRIDE,
    O_UNFINISHED,
    P_ARG,
    P_NOTIFIED,
    P_OBJ,
    P_STATE,
    P_STRIDE,
    P_TIMED,
    P_WAIT,
    PIPE_FRAME,
    WAITSET,
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
    # queues, pipes, pools
    if wait == Wait.MESSAGE:
        return objects[base + O_COUNT] > 0 or not anyone_with(board, objects[base + O_SENDERS])
    if wait == Wait.ROOM:
        return objects[base + O_COUNT] < objects[base + O_LIMIT]
    if wait == Wait.TASKS_DONE:
        return objects[base + O_UNFINISHED] == 0
    if wait == Wait.FLUSHED:
        return (queued_through(board, obj, arg) <= objects[base + O_PIPE_BYTES]
                or not anyone_with(board, objects[base + O_RECEIVERS]))
    if wait == Wait.ANY:
        entries = board.waitsets.mv
        first = slot * WAITSET
        return any(wait_over(board, slot, Wait.MESSAGE, entry, 0) if entry >= 0
                   else wait_over(board, slot, Wait.JOIN, -1 - entry, 0)
                   for entry in entries[first: first + arg])
    raise AssertionError(f"unknown wait {wait}")


def queued_through(board: Board, obj: int, sender: int) -> int:
    """The bytes an OS pipe would hold from the oldest message of channel ``obj`` to the
    last one ``sender`` sent (0 if none of its messages is left): the real sender is
    blocked until they fit."""
    words = board.mailbox.mv
    at, total, through = int(board.objects.mv[obj * O_STRIDE + O_HEAD]), 0, 0
    while at != NOBODY:
        total += words[at + M_SIZE] + PIPE_FRAME
        if words[at + M_SENDER] == sender:
            through = total
        at = int(words[at + M_NEXT])
    return through


def anyone_with(board: Board, mask: int) -> bool:
    """Is a process of these handle bits (``board.handle_bit``) still there to use them?"""
    slots = board.slots.mv
    in_use = int(board.globals.mv[G_SLOTS])
    while mask:
        slot = (mask & -mask).bit_length() - 1
        mask &= mask - 1
        last = in_use if slot == HANDLE_BITS else slot + 1  # the last bit: every slot past
        if any(State.UNUSED != slots[s * P_STRIDE + P_STATE] != State.FINISHED
               for s in range(slot, last)):
            return True
    return False


def can_go(board: Board, slot: int) -> bool:
    """Can the parked process in ``slot`` take its point (its wait is over or may time out)?"""
    slots = board.slots.mv
    base = slot * P_STRIDE
    if slots[base + P_TIMED] or board.globals.mv[G_ABORT]:
        return True
    return wait_over(board, slot, slots[base + P_WAIT], slots[base + P_OBJ], slots[base + P_ARG])
