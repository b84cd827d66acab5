"""Where a failure's race starts: the earlier steps its last steps depend on.

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
  same site: a loop re-checking a flag goes on with the fresh value; a tracker
  step's site is None: any later read of the object is a fresh look).

The walk looks at the failing process, then (one level further) at the writers
it read from: their stale reads (a lost update that corrupted what the failing
process read is found there) and, for a write computed from a read of the same
object, the write that read saw. A write by the process that started the
reader, made before it started it, is the reader's set-up, not a race. The
walk is bounded (a process's last ``LOOK_BACK`` data steps, a few links of each
kind) so that the explanation stays a few lines.

One core serves plain code and trackers: both are first turned into
``DataStep`` s (a worker, a sequence number, the ``core.access`` accesses it
made, the site it made them at). A plain step reads or writes one attribute or
element, with the value it saw; a tracker's point says what the step after it
touches through its words (``Words.accesses``), ``EVERY`` for a whole-structure
scan, with no values. Data only; ``render.plain_report`` and the tracker
explanation (``analysis.tracker_links``) word it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shmstress.core.access import EVERY, Access
from shmstress.plain.outcome import PlainStep

LOOK_BACK = 8
"""A process's data steps (reads, writes) looked at before the step it acted at: further
back is business it had finished."""

MAX_LINKS = 3
"""At most this many links of each kind from the failing process (the latest, nearest the
failure), and one further link from each of their writers."""

Object = tuple[str, int]
"""An object a step touches: ``(kind, id)``, ``id`` ``EVERY`` for all of its kind."""


@dataclass(frozen=True)
class DataStep:
    """A step in the form the walk reads, whatever ran it: plain code or a tracker."""

    seq: int  # its number in the schedule (a plain step's index, a tracker's point)
    worker: int
    accesses: tuple[Access, ...]  # what it read and wrote; () when it touched no data
    site: object = None  # where it ran: a re-read at one site is a loop re-checking
    value: object = None  # what a read saw or a write stored, when it was recorded
    has_value: bool = False
    starts: int = -1  # the worker this step started (plain code), or -1
    shows_unwritten: bool = False  # a read whose value was recorded: it can be of no write
    about: bool = True  # names an object the failure is about: a write a link may name
    names: frozenset[Object] = frozenset()  # the objects a tracker's point names


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

    def from_stale_read(self) -> Enabling:
        """The links from the earliest stale read on: with a stale read found, the race
        starts there, and the writes that came before it are how things stood, not the
        race (a long-running role's state, written many steps before). Unchanged when no
        read was stale."""
        if not self.stale_reads:
            return self
        first = min(stale.read_step for stale in self.stale_reads)
        return Enabling(
            reads_from=tuple(link for link in self.reads_from
                             if link.read_step >= first and link.write_step >= first),
            stale_reads=self.stale_reads)

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


def plain_steps(steps: Sequence[PlainStep]) -> list[DataStep]:
    """Plain steps as data steps: one attribute or element each (its text is its kind)."""
    out = []
    for index, step in enumerate(steps):
        access = accessed(step)
        out.append(DataStep(
            seq=index, worker=step.worker,
            accesses=() if access is None else (Access(access[1], 0, access[0] == "wrote"),),
            site=(step.file, step.line), value=step.value, has_value=step.has_value,
            starts=step.value if step.label.startswith("start ") and isinstance(
                step.value, int) else -1,
            shows_unwritten=step.label.startswith("read ")))
    return out


def _overlap(first: Object, second: Object) -> bool:
    return first[0] == second[0] and (first[1] == second[1] or EVERY in (first[1], second[1]))


def _narrower(first: Object, second: Object) -> Object:
    """Of two overlapping objects, the one that names a single object where one does."""
    return second if first[1] == EVERY else first


Touch = tuple[int, bool, Object]  # (position, wrote, object)


class _Trace:
    """The steps' accesses, with the questions the walk asks of them."""

    def __init__(self, steps: Sequence[DataStep]) -> None:
        self.steps = steps
        self.started: dict[int, tuple[int, int]] = {}  # worker -> (its start step, its parent)
        for index, step in enumerate(steps):
            if step.starts >= 0:
                self.started[step.starts] = (index, step.worker)

    def touches(self, index: int) -> list[Touch]:
        return [(index, a.write, (a.kind, a.id)) for a in self.steps[index].accesses]

    def writes(self, index: int, what: Object) -> bool:
        return any(a.write and _overlap((a.kind, a.id), what) for a in self.steps[index].accesses)

    def set_up(self, write: int, reader: int) -> bool:
        """Was ``write`` made by ``reader``'s parent before it started ``reader``? Then it is
        the value the reader was started with, ordered before it by the start: no race."""
        start, parent = self.started.get(reader, (-1, -1))
        return write < start and self.steps[write].worker == parent

    def last_write(self, what: Object, before: int) -> int | None:
        """The last write of ``what`` before step ``before``; of a whole kind, the last write
        of an object the failure is about, if there is one, else of any."""
        found = None
        for index in range(min(before, len(self.steps)) - 1, -1, -1):
            if self.writes(index, what):
                if what[1] != EVERY or self.steps[index].about:
                    return index
                found = index if found is None else found
        return found

    def recent(self, worker: int, before: int) -> list[Touch]:
        """``worker``'s last ``LOOK_BACK`` data steps before step ``before``, oldest first."""
        found: list[list[Touch]] = []
        for index in range(min(before, len(self.steps)) - 1, -1, -1):
            step = self.steps[index]
            if step.accesses and step.worker == worker:
                found.append(self.touches(index))
                if len(found) == LOOK_BACK:
                    break
        return [touch for touches in found[::-1] for touch in touches]

    def overwrite(self, read: int, worker: int, what: Object, until: int) -> int | None:
        """The first write of ``what`` by another process after ``read`` and before ``until``
        that changed the value ``read`` saw (when both values were recorded)."""
        seen = self.steps[read]
        found = None
        for index in range(read + 1, min(until, len(self.steps))):
            step = self.steps[index]
            if step.worker == worker or not self.writes(index, what):
                continue
            if seen.has_value and step.has_value and step.value == seen.value:
                continue
            if what[1] != EVERY or step.about:
                return index  # of a scan, an overwrite of what the failure is about first
            found = index if found is None else found
        return found

    def caught_up(self, read: int, worker: int, what: Object, write: int, acted: int) -> bool:
        """Did ``worker`` read ``what`` again at the same site after the overwrite at ``write``,
        before acting? A process spinning on a flag reads it stale many times, then fresh, and
        goes on with the fresh value; a check read again at another site (inside the lock it
        then took) is still the check it acted on."""
        site = self.steps[read].site
        for index in range(write + 1, min(acted, len(self.steps))):
            step = self.steps[index]
            if step.worker == worker and step.site == site and any(
                    not wrote and _overlap(obj, what) for _, wrote, obj in self.touches(index)):
                return True
        return False

    def reads_from(self, worker: int, before: int) -> list[tuple[Object, ReadLink]]:
        """The other processes' writes that ``worker``'s latest read of each object, among its
        recent steps, read (a scan of every object of a kind read too many to name one)."""
        latest: dict[Object, int] = {}
        for index, wrote, what in self.recent(worker, before):
            if not wrote and what[1] != EVERY:
                latest[what] = index
        links = []
        for what, read in latest.items():
            link = self.read_from(worker, what, read)
            if link is not None:
                links.append(link)
        return links

    def read_from(self, worker: int, what: Object, read: int) -> tuple[Object, ReadLink] | None:
        """The link of ``worker``'s read of ``what`` at ``read`` to the write it read, if that
        write is another process's and not set-up; or to no write at all."""
        write = self.last_write(what, read)
        if write is None:  # a traced line that only uses an object read no value of it
            return ((what, (worker, read, -1, -1))
                    if self.steps[read].shows_unwritten else None)
        writer = self.steps[write].worker
        if writer == worker or self.set_up(write, worker):
            return None
        written = next(_narrower(what, obj) for _, wrote, obj in self.touches(write)
                       if wrote and _overlap(obj, what))
        return written, (worker, read, writer, write)

    def read_before_write(self, what: Object, writer: int, write: int
                          ) -> tuple[Object, ReadLink] | None:
        """The writer of ``what`` at ``write`` read the object it then wrote (an update
        computed from what it read, not a scan of its whole kind): where did that value
        come from?"""
        latest = None
        for index, wrote, obj in self.recent(writer, write):
            if not wrote and obj[1] != EVERY and _overlap(obj, what):
                latest = index, obj
        if latest is None:
            return None
        found = self.read_from(writer, latest[1], latest[0])
        return found if found is not None and found[1][3] >= 0 else None

    def stale_reads(self, worker: int, acted: int, scans: bool = True
                    ) -> list[tuple[Object, StaleLink]]:
        """``worker``'s recent reads that another process overwrote before step ``acted``: per
        object, the last of the reads that saw the value overwritten (the look it went on
        with: a scan repeated before the overwrite saw nothing new). Without ``scans``, a
        read of every object of a kind is left out: a failure that comes after a scan is
        seldom about whatever changed in it since; a write computed from one may be, when
        the write names the very object that changed (the entry of a pod the scan did not
        list)."""
        found: dict[Object, tuple[Object, StaleLink]] = {}
        for index, wrote, what in reversed(self.recent(worker, acted)):
            if wrote or what in found or (not scans and what[1] == EVERY):
                continue
            write = self.overwrite(index, worker, what, acted)
            if write is not None and not self.caught_up(index, worker, what, write, acted):
                written = next(_narrower(what, obj) for _, w, obj in self.touches(write)
                               if w and _overlap(obj, what))
                if what[1] == EVERY and (acted >= len(self.steps)
                                         or written not in self.steps[acted].names):
                    continue
                found[what] = written, (worker, index, self.steps[write].worker, write, acted)
        return list(found.values())


ReadLink = tuple[int, int, int, int]  # reader, read position, writer, write position (or -1)
StaleLink = tuple[int, int, int, int, int]  # reader, read, writer, write, acted (positions)


def walk(steps: Sequence[DataStep], worker: int, acted: int,
         name: Callable[[Object], str], since: int = 0) -> Enabling:
    """The links from ``worker``'s failure (at or after step ``acted``: the steps before it
    are what it did and saw) back to its race; ``name`` words an object. A link names a write
    about the failure's objects (``DataStep.about``): of a scan's many writers (a read of
    ``EVERY`` object of a kind) such a write is preferred, and a link to another is none.
    The failing worker's reads before step ``since`` (where its operation began, when known)
    were its earlier business: no link starts at them."""
    if worker < 0:
        return Enabling()
    trace = _Trace(steps)
    bound = next((i for i, s in enumerate(steps) if s.seq >= acted), len(steps))

    def seq(position: int) -> int:
        return steps[position].seq if position < bound else acted

    def read_link(found: tuple[Object, ReadLink]) -> ReadFrom:
        what, (reader, read, writer, write) = found
        return ReadFrom(name(what), reader, seq(read), writer, seq(write) if write >= 0 else -1)

    def about(write: int) -> bool:
        return write < 0 or steps[write].about

    def current(read: int) -> bool:
        return steps[read].seq >= since

    raw_reads = sorted((r for r in trace.reads_from(worker, bound)
                        if about(r[1][3]) and current(r[1][1])),
                       key=lambda r: r[1][1])[-MAX_LINKS:]
    stale = [s for s in trace.stale_reads(worker, bound, scans=False)
             if about(s[1][3]) and current(s[1][1])]
    more_reads = []
    for what, (_, _, writer, write) in raw_reads:  # one level further: the writers' reads
        if write >= 0:
            stale.extend(s for s in trace.stale_reads(writer, write) if about(s[1][3]))
            update = trace.read_before_write(what, writer, write)
            if update is not None and about(update[1][3]):
                more_reads.append(update)
    reads = {read_link(found) for found in (*raw_reads, *more_reads)}
    unique = sorted({(s[1][1], s[1][3]): s for s in stale}.values(), key=lambda s: s[1][1])
    stale_links = [StaleRead(name(what), reader, seq(read), writer, seq(write), seq(done))
                   for what, (reader, read, writer, write, done) in unique[-MAX_LINKS:]]
    return Enabling(reads_from=tuple(sorted(reads, key=lambda r: r.read_step)),
                    stale_reads=tuple(stale_links))


def enabling(steps: tuple[PlainStep, ...], worker: int, acted: int) -> Enabling:
    """The links from a plain process's failure (after step ``acted - 1``) back to its race."""
    return walk(plain_steps(steps), worker, acted, lambda what: what[0])
