"""What a run recorded, decoded: labels with call sites, records, and the schedule.

Plain data, built by ``shmstress.record.recorder`` after the workers are gone
and read by everything that explains, renders or replays a run.
"""

from __future__ import annotations

from dataclasses import dataclass

LEVELS = "IWE"  # a record's level is an index into this (klog's severity letters)


@dataclass(frozen=True)
class Label:
    """An interned string: a label with its call site (``line >= 0``), or a name or value."""

    text: str
    file: str
    line: int


@dataclass(frozen=True)
class Record:
    """One recorded point, decoded."""

    seq: int
    t_ns: int
    worker: int
    label: int
    fields: tuple[tuple[str, object], ...]
    sub: int = 0  # 0: a point; k >= 1: the k-th log call after point ``seq`` of this worker
    level: int = 0  # index into LEVELS


def step_number(index: int) -> int:
    """The number a step (a tracker's point) is printed and stored under: its index in the
    schedule plus one, so the first step is step 1 and a schedule of 13 steps ends at step
    13, as executions are counted. Every renderer and every field a user or a script reads
    numbers steps through this one function; schedules, tapes and sequence numbers inside
    the harness stay indexes from 0."""
    return index + 1


@dataclass(frozen=True)
class Step:
    """One step of a schedule: which worker took the point, at which label."""

    worker: int
    label: str


@dataclass(frozen=True)
class Recording:
    """Everything recorded in a run, decoded after the workers are gone."""

    labels: tuple[Label, ...]
    records: tuple[Record, ...]  # merged from every worker's ring, in sequence order
    ring_lost: dict[int, int]  # worker -> ring slots overwritten (or torn by a kill)
    steps: tuple[Step, ...]  # the schedule, from sequence number 0 without gaps
    tape_lost: int  # points past the end of the tape (not replayable)
    mono0_ns: int
    wall0_ns: int
    logs: tuple[Record, ...] = ()  # log calls between points, in (seq, sub) order

    def wall_time(self, t_ns: int) -> float:
        """Wall-clock seconds of a record's monotonic timestamp."""
        return (self.wall0_ns + (t_ns - self.mono0_ns)) / 1e9
