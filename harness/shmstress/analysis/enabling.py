"""Where a plain-code failure's race starts: the earlier steps its last steps depend on.

The steps just before a failure show its symptom (a reader sees a half-done
update, an assert compares two values that disagree); the step that made it
possible often came earlier: the write of a ready flag the reader saw before
the rows it guards were written, a flag read outside the lock and then acted
on, a list head read and then overwritten by another process before the write
computed from it. All three are found here the same way, from what each step
read or wrote (no pattern names a shape), by walking back from the failure:

- *reads from*: each object the failing process read in its last steps was
  last written, before that read, by some step; when that step is another
  process's, the failing process depends on it;
- *stale read*: a read by a process whose object another process overwrote
  before the process acted (failed, or wrote what it had computed): it went on
  with a value that was no longer true (unless it read the object again at the
  same line: a loop re-checking a flag goes on with the fresh value).

The walk looks at the failing process, then (one level further) at the writers
it read from: their stale reads (a lost update that corrupted what the failing
process read is found there) and, for a write computed from a read of the same
object, the write that read saw. A write by the process that started the
reader, made before it started it, is the reader's set-up, not a race. The
walk is bounded (a process's last ``LOOK_BACK`` data steps, a few links of each
kind) so that the explanation stays a few lines. Data only; ``render.plain_report`` words it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.plain.outcome import PlainStep

LOOK_BACK = 8
"""A process's data steps (reads, writes) looked at before the step it acted at: further
back is business it had finished."""

MAX_LINKS = 3
"""At most this many links of each kind from the failing process (the latest, nearest the
failure), and one further link from each of their writers."""


@dataclass(frozen=True)
class ReadFrom:
    """``reader`` read ``what`` at ``read_step``: the value ``writer`` wrote at ``write_step``,
    or (both -1) the value it was created with, no step having written it yet: the rows a
    reader found unwritten after their ready flag."""

    what: str
    reader: int
    read_step: int
    writer: int
    write_step: int

    @property
    def unwritten(self) -> bool:
        return self.write_step < 0


@dataclass(frozen=True)
class StaleRead:
    """``reader`` read ``what`` at ``read_step``, ``writer`` overwrote it at ``write_step``, and
    ``reader`` acted at ``acted_step`` (a write, or its failure: the failure's step count)."""

    what: str
    reader: int
    read_step: int
    writer: int
    write_step: int
    acted_step: int


@dataclass(frozen=True)
class Enabling:
    """The links from a failure back to where its race starts; empty when none was found."""

    reads_from: tuple[ReadFrom, ...] = ()
    stale_reads: tuple[StaleRead, ...] = ()

    @property
    def steps(self) -> frozenset[int]:
        """Every step a link names (the acted steps too, bar the failure itself)."""
        named: set[int] = set()
        for link in self.reads_from:
            named.add(link.read_step)
            if not link.unwritten:
                named.add(link.write_step)
        for stale in self.stale_reads:
            named.update((stale.read_step, stale.write_step, stale.acted_step))
        return frozenset(named)

    @property
    def start(self) -> int | None:
        """The earliest step a link names, where the explanation starts; a read of what no
        step had written is the symptom's, not a start."""
        return min(self.steps - {link.read_step for link in self.reads_from if link.unwritten},
                   default=None)


def accessed(step: PlainStep) -> tuple[str, str] | None:
    """(how, what) of a step that reads or writes shared data: ``("read", "counter.value")``;
    a traced line that uses an object counts as a read of it (``"used"``). An element of
    unknown index (``buf[]``) stands for the whole object."""
    verb, _, what = step.what.partition(" ")
    if verb not in ("read", "write", "use") or not what:
        return None
    return {"read": "read", "write": "wrote", "use": "used"}[verb], what.removesuffix("[]")


Access = tuple[int, str, str]  # (step index, "read" | "wrote", what): a use is a read


def _accesses(steps: tuple[PlainStep, ...]) -> list[Access | None]:
    out: list[Access | None] = []
    for index, step in enumerate(steps):
        access = accessed(step)
        out.append(None if access is None else
                   (index, "wrote" if access[0] == "wrote" else "read", access[1]))
    return out


class _Trace:
    """The steps' accesses, with the questions the walk asks of them."""

    def __init__(self, steps: tuple[PlainStep, ...]) -> None:
        self.steps = steps
        self.accesses = _accesses(steps)
        self.started: dict[int, tuple[int, int]] = {}  # slot -> (its start step, its parent)
        for index, step in enumerate(steps):
            if step.label.startswith("start ") and isinstance(step.value, int):
                self.started[step.value] = (index, step.worker)

    def set_up(self, write: int, reader: int) -> bool:
        """Was ``write`` made by ``reader``'s parent before it started ``reader``? Then it is
        the value the reader was started with, ordered before it by the start: no race."""
        start, parent = self.started.get(reader, (-1, -1))
        return write < start and self.steps[write].worker == parent

    def last_write(self, what: str, before: int) -> int | None:
        for index in range(min(before, len(self.steps)) - 1, -1, -1):
            access = self.accesses[index]
            if access is not None and access[1] == "wrote" and access[2] == what:
                return index
        return None

    def recent(self, worker: int, before: int) -> list[Access]:
        """``worker``'s last ``LOOK_BACK`` data steps before step ``before``, oldest first."""
        found: list[Access] = []
        for index in range(min(before, len(self.steps)) - 1, -1, -1):
            access = self.accesses[index]
            if access is not None and self.steps[index].worker == worker:
                found.append(access)
                if len(found) == LOOK_BACK:
                    break
        return found[::-1]

    def overwrite(self, read: int, worker: int, what: str, until: int) -> int | None:
        """The first write of ``what`` by another process after ``read`` and before ``until``
        that changed the value ``read`` saw (when both values were recorded)."""
        seen = self.steps[read]
        for index in range(read + 1, min(until, len(self.steps))):
            access = self.accesses[index]
            step = self.steps[index]
            if (access is None or access[1] != "wrote" or access[2] != what
                    or step.worker == worker):
                continue
            if seen.has_value and step.has_value and step.value == seen.value:
                continue
            return index
        return None

    def caught_up(self, read: int, worker: int, what: str, write: int, acted: int) -> bool:
        """Did ``worker`` read ``what`` again at the same line after the overwrite at ``write``,
        before acting? A process spinning on a flag reads it stale many times, then fresh, and
        goes on with the fresh value; a check read again at another line (inside the lock it
        then took) is still the check it acted on."""
        first = self.steps[read]
        for index in range(write + 1, min(acted, len(self.steps))):
            step = self.steps[index]
            access = self.accesses[index]
            if (access is not None and step.worker == worker and access[1:] == ("read", what)
                    and (step.file, step.line) == (first.file, first.line)):
                return True
        return False

    def reads_from(self, worker: int, before: int) -> list[ReadFrom]:
        """The other processes' writes that ``worker``'s latest read of each object, among its
        recent steps, read."""
        latest: dict[str, int] = {}
        for index, how, what in self.recent(worker, before):
            if how == "read":
                latest[what] = index
        links = []
        for what, read in latest.items():
            link = self.read_from(worker, what, read)
            if link is not None:
                links.append(link)
        return links

    def read_from(self, worker: int, what: str, read: int) -> ReadFrom | None:
        """The link of ``worker``'s read of ``what`` at ``read`` to the write it read, if that
        write is another process's and not set-up; or to no write at all."""
        write = self.last_write(what, read)
        if write is None:  # a traced line that only uses an object read no value of it
            return (ReadFrom(what, worker, read, -1, -1)
                    if self.steps[read].label.startswith("read ") else None)
        writer = self.steps[write].worker
        if writer == worker or self.set_up(write, worker):
            return None
        return ReadFrom(what, worker, read, writer, write)

    def read_before_write(self, link: ReadFrom) -> ReadFrom | None:
        """The writer of ``link`` read the object it then wrote (an update computed from what
        it read): where did that value come from?"""
        latest = None
        for index, how, what in self.recent(link.writer, link.write_step):
            if how == "read" and what == link.what:
                latest = index
        if latest is None:
            return None
        found = self.read_from(link.writer, link.what, latest)
        return found if found is not None and not found.unwritten else None

    def stale_reads(self, worker: int, acted: int) -> list[StaleRead]:
        """``worker``'s recent reads that another process overwrote before step ``acted``: per
        object, the first of the reads that saw the value overwritten."""
        found: dict[str, StaleRead] = {}
        for index, how, what in self.recent(worker, acted):
            if how != "read" or what in found:
                continue
            write = self.overwrite(index, worker, what, acted)
            if write is not None and not self.caught_up(index, worker, what, write, acted):
                found[what] = StaleRead(what, worker, index, self.steps[write].worker, write,
                                        acted)
        return list(found.values())


def enabling(steps: tuple[PlainStep, ...], worker: int, acted: int) -> Enabling:
    """The links from ``worker``'s failure (after step ``acted - 1``) back to its race."""
    if worker < 0:
        return Enabling()
    trace = _Trace(steps)
    reads_from = sorted(trace.reads_from(worker, acted), key=lambda r: r.read_step)[-MAX_LINKS:]
    stale = trace.stale_reads(worker, acted)
    for link in list(reads_from):  # one level further: what a writer computed its write from
        if not link.unwritten:
            stale.extend(trace.stale_reads(link.writer, link.write_step))
            update = trace.read_before_write(link)
            if update is not None:
                reads_from.append(update)
    unique = sorted({(s.read_step, s.write_step): s for s in stale}.values(),
                    key=lambda s: s.read_step)
    return Enabling(
        reads_from=tuple(sorted(set(reads_from), key=lambda r: r.read_step)),
        stale_reads=tuple(unique[-MAX_LINKS:]),
    )
