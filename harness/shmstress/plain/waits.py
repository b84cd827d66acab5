"""Whether a parked process can take its point now: one rule, asked by both sides.

The coordinator asks it for every parked process to know who is runnable; a
process asks it for itself to know whether it may go on under its lease.
"""

from __future__ import annotations

import os

from shmstress.plain.board import (
    G_ABORT,
    G_SLOTS,
    HANDLE_BITS,
    HOLDER_BITS,
    HOST,
    M_NEXT,
    M_SENDER,
    M_SIZE,
    NOBODY,
    O_BROKEN,
    O_COUNT,
    O_DEVICE,
    O_GENERATION,
    O_HEAD,
    O_HOLDERS,
    O_KEY,
    O_KIND,
    O_LIMIT,
    O_OWNER,
    O_PIPE_BYTES,
    O_RECEIVERS,
    O_SENDERS,
    O_STRIDE,
    O_UNFINISHED,
    P_ARG,
    P_HANDING_OFF,
    P_NOTIFIED,
    P_OBJ,
    P_PID,
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

PLUMBING = True  # the processes run it: its own calls are no program code (``plumbing``)


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
    # file locks
    if wait == Wait.FILE_LOCK:
        owner, shared = file_lock_holders(board, obj, slot)
        return owner == NOBODY and (not arg or not shared)
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


# -- file locks ------------------------------------------------------------------------------
_OS_TYPE = {Kind.FILE_LOCK: "FLOCK", Kind.RECORD_LOCK: "POSIX"}


def holder_bit(slot: int) -> int:
    """A slot's bit among a file lock's shared holders (``O_HOLDERS``)."""
    return 1 << (HOLDER_BITS - 1 if slot == HOST else slot)


def file_lock_holders(board: Board, obj: int, slot: int) -> tuple[int, list[int]]:
    """Who, other than ``slot``, still holds the file lock ``obj``: its exclusive holder (or
    NOBODY) and its shared holders. The board keeps who took it; a holder that finished, or
    whose lock the OS no longer has (it closed the file: ``with open(...)`` ends, a last
    descriptor goes), holds it no longer, though nobody wrote that down: the closing is no
    point, and the holder's next step would come too late for a waiter to see it in time.
    The OS is asked only when someone else holds it (``/proc/locks``, one read)."""
    objects = board.objects.mv
    base = obj * O_STRIDE
    owner = int(objects[base + O_OWNER])
    bits = int(objects[base + O_HOLDERS])
    shared = [HOST if s == HOLDER_BITS - 1 else s
              for s in range(bits.bit_length()) if bits >> s & 1]
    shared = [s for s in shared if s != slot]
    others = [s for s in (owner, *shared) if s not in (NOBODY, slot)]
    if not others:
        return NOBODY, []
    live = os_holders(Kind(objects[base + O_KIND]), int(objects[base + O_DEVICE]),
                      int(objects[base + O_KEY]))

    def holds(other: int) -> bool:
        if other == HOST:
            return True  # the host keeps what it took at import for the whole session
        base_ = other * P_STRIDE
        return (board.slots.mv[base_ + P_STATE] != State.FINISHED
                and int(board.slots.mv[base_ + P_PID]) in live)

    owner = owner if owner not in (NOBODY, slot) and holds(owner) else NOBODY
    return owner, [s for s in shared if holds(s)]


def os_holders(kind: Kind, device: int, inode: int) -> set[int]:
    """The pids holding an OS lock of ``kind`` on the file (device, inode), waiters aside."""
    where = f"{os.major(device):02x}:{os.minor(device):02x}:{inode}"
    word = _OS_TYPE[kind]
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        return set()
    pids = set()
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1] == word and fields[5] == where:
            pids.add(int(fields[4]))
    return pids


def another_can_go(board: Board, slot: int, besides: int = NOBODY) -> bool:
    """Free mode: can a process other than ``slot`` (and ``besides``) take a step soon: one
    running its code, one being started, one parked whose wait is over? (Not one handing
    off itself.)"""
    slots = board.slots.mv
    for other in range(int(board.globals.mv[G_SLOTS])):
        base = other * P_STRIDE
        if other in (slot, besides) or slots[base + P_HANDING_OFF]:
            continue
        state = slots[base + P_STATE]
        if state == State.RUNNING or (state == State.PARKED and can_go(board, other)):
            return True
    return False


def can_go(board: Board, slot: int) -> bool:
    """Can the parked process in ``slot`` take its point (its wait is over or may time out)?"""
    slots = board.slots.mv
    base = slot * P_STRIDE
    if slots[base + P_TIMED] or board.globals.mv[G_ABORT]:
        return True
    return wait_over(board, slot, slots[base + P_WAIT], slots[base + P_OBJ], slots[base + P_ARG])
