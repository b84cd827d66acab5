"""The shared memory of a plain-code session: process slots, objects, schedule, failure.

The coordinator builds the board before it forks the host, so every process of
every execution (the host's forked ``main`` and the processes it starts) maps
the same arrays. In controlled mode one process runs at a time, so no field is
guarded by a lock: whoever runs owns the board until it parks.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from multiprocessing.synchronize import Lock as MpLock
from multiprocessing.synchronize import Semaphore as MpSemaphore

from shmstress.core.shm import Arena, SharedArray
from shmstress.plain.spec import MAILBOX_BYTES

PLUMBING = True  # the processes run it: its own calls are no program code (``plumbing``)
ARRAY_PREFIX = "plain."
NOBODY = -1
HOST = -2  # the owner of a lock taken outside any execution (at import, in the host)

# per-slot fields (a slot is one process of the execution; slot 0 is main)
P_STATE = 0
P_LABEL = 1  # label id of the point the process is parked at
P_WAIT = 2  # Wait: what the point waits for
P_OBJ = 3  # ... on which object (or, for JOIN, which slot)
P_ARG = 4  # ... with which argument (a barrier's generation)
P_TIMED = 5  # the wait has a timeout: the point can be taken even if its wait is not over
P_YIELDED = 6  # the process yielded (sleep, sched_yield, a timed-out wait) since its last step
P_LEASE = 7  # further steps the process may take before it must ask again
P_NAME = 8  # string id of the process's name ("increment #2")
P_PID = 9
P_EXITCODE = 10
P_COND = 11  # the condition the process waits to be notified on, or NOBODY
P_TICKET = 12  # its place in that condition's queue
P_NOTIFIED = 13
P_FAMILY = 14  # string id of the name before its number ("increment")
P_HANDING_OFF = 15  # free mode: it lets the others go first, and goes on by itself after
P_WOKEN_BY = 16  # free mode: the slot whose step woke this parked process last, or NOBODY
P_STRIDE = 17

# per-object fields
O_KIND = 0
O_NAME = 1  # string id of its name ("counter", "locks#2")
O_OWNER = 2  # the slot holding a lock, or NOBODY
O_COUNT = 3  # a semaphore's value, an RLock's depth, an event's flag, a barrier's arrivals
O_LIMIT = 4  # a bounded semaphore's bound, a barrier's parties
O_GENERATION = 5  # a barrier's generation
O_BROKEN = 6  # a barrier that was aborted
O_FAMILY = 7  # string id of the name it was created under, before a "#2" told it apart
# ... of a queue, or of a pipe's direction (sync/connection.py, sync/queue.py): a channel
O_HEAD = 8  # mailbox word of its first message, or NOBODY (O_COUNT: its messages)
O_TAIL = 9  # ... of its last one (O_LIMIT: a bounded queue's maxsize, else 0)
O_SENT_BY = 10  # the slot that put or sent last, HOST at import, or NOBODY
O_TAKEN_BY = 11  # the slot that got or received last, or NOBODY
O_SENDERS = 12  # slots with an end open that sends into it, a bit each (handle_bit)
O_RECEIVERS = 13  # ... that receives from it
O_UNFINISHED = 14  # a JoinableQueue's tasks not yet marked done
O_PIPE_BYTES = 15  # what the OS pipe it stands for would hold, or 0 (not modelled)
O_STRIDE = 16
# ... of what the OS or the user knows by a name of its own (sync/file_lock.py,
# sync/posix_semaphore.py, sync/declared.py), in fields their kinds do not use otherwise
O_KEY = O_GENERATION  # a file lock's inode; a named semaphore's or declared lock's key (0: none)
O_DEVICE = O_COUNT  # a file lock's device
O_HOLDERS = O_LIMIT  # a file lock's shared holders, a bit a slot (HOLDER_BITS)
O_SITE = O_BROKEN  # 1 + label id of the step at which its holder took it, or 0
HOLDER_BITS = 62  # slots a shared file lock tells apart; the HOST's bit is the last one

# globals
G_STEP = 0  # index of the next step
G_SEED = 1  # the execution seed (each process's ``random`` derives from it)
G_ABORT = 2  # the execution is over: every process unwinds at its next point
G_WAKE = 3  # something may have become runnable since the last grant: ask before going on
G_SLOTS = 4  # slots handed out in this execution
G_OBJECTS = 5  # objects created (those created at import survive every execution)
G_FAILED = 6  # 1 + the slot whose process raised, or 0
G_FAIL_STEP = 7  # the step after which it raised
G_FAIL_LEN = 8  # bytes of the failure text
G_TICKETS = 9  # condition queue tickets handed out
G_HOST_EXIT = 10  # tells the host to leave instead of running another execution
G_STEP_LIMIT = 11  # no step at or past it is granted
G_SEGMENTS = 12  # named shared-memory segments in the segment table
G_HOST_SEGMENTS = 13  # ... of which the first ones were created at import, in the host
G_NAMES = 14  # entries of the name table
G_GAPS = 15  # entries of the gap table: what the self-check saw outside control
G_SCAN_MAPS = 16  # the self-check reads each process's mappings in this execution
# the mailbox (sync/mailbox.py)
G_MAIL_TOP = 17  # its first free word
G_MAIL_BASE = 18  # ... below which are the messages put at import, in the host
G_MAIL_LIVE = 19  # messages put in this execution and not yet taken
G_LIMIT = 20  # the process that raised hit a limit of the board (PlainLimitError), not a bug
_GLOBALS = 24
MAX_SEGMENTS = 256

# per-segment fields: every named segment the scenario creates, to unlink when it is done
S_NAME = 0  # string id of its name
S_UNLINKED = 1
S_STRIDE = 2

# the name table: an object the OS knows by a name (a segment) -> the name its steps use
N_OS = 0  # string id of the OS name
N_LABEL = 1  # string id of the name its steps use
N_STRIDE = 2
MAX_NAMES = 512

# the gap table (``plain.selfcheck``): one row for each thing seen outside control
GAP_KIND = 0  # selfcheck.Gap
GAP_SLOT = 1  # the process that saw it
GAP_WHAT = 2  # string id: the memory, the mapping, the thread
GAP_FROM = 3  # label id of the point before (where the step that did it began), or 0
GAP_TO = 4  # label id of the point after (where it was seen), or 0
GAP_STRIDE = 5
MAX_GAPS = 64

# the slots a process waits on with Wait.ANY: per slot, up to WAITSET entries, each a
# channel's object row (a message there, or no sender left) or -1 - slot (its exit)
WAITSET = 32
HANDLE_BITS = 62  # slots from this one on share one bit of O_SENDERS / O_RECEIVERS
# a message in the mailbox: a header of M_HEADER words, then its bytes
M_NEXT = 0  # the word of the channel's next message, or NOBODY
M_SIZE = 1  # its length in bytes
M_SENDER = 2  # the slot that sent it
M_HEADER = 3
PIPE_BYTES = 65536  # a Linux pipe's buffer: a queue's or a one-way Pipe's
PIPE_FRAME = 4  # the length word multiprocessing writes before each message

FAILURE_BYTES = 16384


class State(enum.IntEnum):
    """Where a slot's process is (0: the slot is not in use)."""

    UNUSED = 0
    PARKED = 1  # at a point, waiting for a grant
    RUNNING = 2
    FINISHED = 3


class Wait(enum.IntEnum):
    """What a point waits for before it can be taken."""

    NOTHING = 0
    LOCK = 1  # a Lock or RLock to be free (or, for an RLock, held by the waiter)
    SEMAPHORE = 2  # a semaphore's value to be above zero
    EVENT = 3  # an event to be set
    NOTIFY = 4  # a notify on the condition the process waits on
    BARRIER = 5  # the barrier's generation to move past P_ARG
    JOIN = 6  # the process in slot P_OBJ to finish
    # queues, pipes, pools (sync/connection.py, sync/queue.py)
    MESSAGE = 7  # a message in channel P_OBJ, or no process left with an end that sends
    ROOM = 8  # the bounded queue P_OBJ below its maxsize
    TASKS_DONE = 9  # every task put into the joinable queue P_OBJ marked done
    ANY = 10  # any of the slot's P_ARG waitset entries (a message, an exit)
    FLUSHED = 11  # what slot P_ARG sent into channel P_OBJ fits in its OS pipe, or no reader
    FILE_LOCK = 20  # the file lock P_OBJ free of other holders (P_ARG 1: exclusive, 0: shared)


class Kind(enum.IntEnum):
    """What an object of the board is."""

    LOCK = 1
    RLOCK = 2
    SEMAPHORE = 3
    BOUNDED_SEMAPHORE = 4
    CONDITION = 5
    EVENT = 6
    BARRIER = 7
    VALUE = 8
    ARRAY = 9
    # sync/connection.py, sync/queue.py
    PIPE = 10  # one direction of a Pipe: the messages one end receives
    QUEUE = 11  # a Queue, JoinableQueue or SimpleQueue
    # sync/manager.py
    MANAGER = 12  # a multiprocessing manager
    MANAGED = 13  # an object a manager holds (a dict, a Namespace, a registered class's)
    FILE_LOCK = 20  # an flock on a file (sync/file_lock.py)
    RECORD_LOCK = 21  # a lockf / fcntl(F_SETLK) lock on a file


@dataclass
class Board:
    """The arrays and semaphores above; built by the coordinator before any fork."""

    slots: SharedArray
    objects: SharedArray
    globals: SharedArray
    step_label: SharedArray
    step_slot: SharedArray
    step_index: SharedArray  # an array element's index, or -1
    step_value: SharedArray  # what a read saw or a write stored (see step_kind)
    step_kind: SharedArray  # ValueKind of step_value
    step_time: SharedArray  # monotonic ns at which the process took the step
    step_loose: SharedArray  # free mode: after the step, code outside control ran unlocked
    failure: SharedArray
    segments: SharedArray
    names: SharedArray
    digests: SharedArray  # a checksum of each watched buffer, as the last step left it
    gaps: SharedArray
    mailbox: SharedArray  # pickled messages of queues and pipes (sync/mailbox.py)
    waitsets: SharedArray  # Wait.ANY's entries, WAITSET a slot
    grants: list[MpSemaphore]
    step_lock: MpLock  # free mode: held from a point to the next one
    report: MpSemaphore
    host_go: MpSemaphore
    host_done: MpSemaphore
    max_slots: int
    max_objects: int
    max_steps: int

    @classmethod
    def build(cls, arena: Arena, max_slots: int, max_objects: int, max_steps: int,
              room: int = 0, mailbox_bytes: int = MAILBOX_BYTES) -> Board:
        """``room``: steps the step log keeps past ``max_steps`` (the no-progress probe's).
        The mailbox costs memory only where messages were written: its pages are touched
        as they are used, and none of it is restored between executions (sync/mailbox.py)."""
        def array(name: str, length: int, fill: int = 0) -> SharedArray:
            return arena.array(ARRAY_PREFIX + name, length, fill)

        steps = max_steps + room + 1
        sync = arena.semaphores

        return cls(
            slots=array("slots", max_slots * P_STRIDE),
            objects=array("objects", max_objects * O_STRIDE),
            globals=array("globals", _GLOBALS),
            step_label=array("step_label", steps),
            step_slot=array("step_slot", steps),
            step_index=array("step_index", steps, fill=-1),
            step_value=array("step_value", steps),
            step_kind=array("step_kind", steps),
            step_time=array("step_time", steps),
            step_loose=array("step_loose", steps),
            failure=array("failure", FAILURE_BYTES // 8),
            segments=array("segments", MAX_SEGMENTS * S_STRIDE),
            names=array("names", MAX_NAMES * N_STRIDE),
            digests=array("digests", max_objects + MAX_NAMES),
            gaps=array("gaps", MAX_GAPS * GAP_STRIDE),
            mailbox=array("mailbox", max(mailbox_bytes // 8, 1)),
            waitsets=array("waitsets", max_slots * WAITSET),
            grants=[sync.semaphore() for _ in range(max_slots)],
            step_lock=sync.lock(),
            report=sync.semaphore(),
            host_go=sync.semaphore(),
            host_done=sync.semaphore(),
            max_slots=max_slots,
            max_objects=max_objects,
            max_steps=max_steps,
        )

    def slot(self, slot: int, field: int) -> int:
        return int(self.slots.mv[slot * P_STRIDE + field])

    def set_slot(self, slot: int, field: int, value: int) -> None:
        self.slots.mv[slot * P_STRIDE + field] = value

    def obj(self, obj: int, field: int) -> int:
        return int(self.objects.mv[obj * O_STRIDE + field])

    def set_obj(self, obj: int, field: int, value: int) -> None:
        self.objects.mv[obj * O_STRIDE + field] = value

    def inherit(self, parent: int, child: int) -> None:
        """A process started by ``parent`` has every queue and pipe end open that its parent
        has, as a fork's child has its parent's descriptors (sync/connection.py)."""
        if parent < 0:
            return
        objects = self.objects.mv
        have, bit = handle_bit(parent), handle_bit(child)
        for base in range(0, int(self.globals.mv[G_OBJECTS]) * O_STRIDE, O_STRIDE):
            if objects[base + O_KIND] in (Kind.PIPE, Kind.QUEUE):
                for field in (O_SENDERS, O_RECEIVERS):
                    if objects[base + field] & have:
                        objects[base + field] |= bit

    def take_step(self, label: int, slot: int, t_ns: int = 0) -> int:
        """Log the next step of the execution (whoever owns the board now); its index."""
        step = int(self.globals.mv[G_STEP])
        self.step_label.mv[step] = label
        self.step_slot.mv[step] = slot
        self.step_index.mv[step] = -1
        self.step_kind.mv[step] = ValueKind.ABSENT
        self.step_time.mv[step] = t_ns
        self.step_loose.mv[step] = 0
        self.globals.mv[G_STEP] = step + 1
        return step

    def write_failure(self, text: str) -> None:
        data = text.encode("utf-8", "replace")[:FAILURE_BYTES]
        self.failure.mv.cast("B")[: len(data)] = data
        self.globals.mv[G_FAIL_LEN] = len(data)

    def failure_text(self) -> str:
        length = int(self.globals.mv[G_FAIL_LEN])
        return bytes(self.failure.mv.cast("B")[:length]).decode("utf-8", "replace")


def handle_bit(slot: int) -> int:
    """The bit of a slot in a channel's O_SENDERS or O_RECEIVERS (slot 0 for the host: an
    execution's main inherits what the host opened at import)."""
    return 1 << min(max(slot, 0), HANDLE_BITS)


class ValueKind(enum.IntEnum):
    """How a step's value word reads back."""

    ABSENT = 0  # the step read or wrote no value
    INT = 1
    FLOAT = 2  # the IEEE 754 bits
    BOOL = 3
