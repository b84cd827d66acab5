"""Aimed noise: delay where races can happen, learnt while the run goes (TSVD-style).

Uniform noise slows every worker alike at every point, which mostly shifts the
whole run in time. TSVD (Li et al., SOSP 2019) instead watches for *near
misses*: two workers touching the same object from two program locations
within a short window. Such a pair is where a delay can flip the order of the
two accesses, so the delays go there and only there.

Here an object is what the step after a point reads or writes, as the tracker's
``Words.accesses`` declares it, plus the instrumented lock whose acquire the point
is. Where that is declared, a near miss needs one of the two accesses to write
(TSVD's rule), and a scan of every object of a kind (``EVERY``) meets each single
one of it. Where it is not, the objects are whatever the point's fields name
(``Words.subjects``), each taken as written: any two accesses to one object by two
different workers count (an extra target only costs a few delays before back-off
silences it).

A delay is a yield or a drawn sleep, as uniform noise's. ``AimParams.handoff`` makes
it a *handoff* instead: free mode runs one step at a time (the step lock), so a delay
helps only if another worker takes steps during it; the delayed worker lets go and
waits until the others have made a drawn number of points, up to the widest gap seen
between a near-miss pair's two accesses (the later side needed that many points to get
there), capped at ``handoff_cap`` x ``--max-sleep-us``. It is off: on a race whose
window needs a long delay (a delivery held back while a whole read goes by) it ended
delays too soon, and the bench measured it worse there (issue 14's notes).

In a free run the gate runs under the step lock (``Runtime.gate_holds``) and lets go
only to delay. Run after letting go, as it once was, its few microseconds at every
point were a chance for a waiting worker to take the lock: a handoff at nearly every
point, which halved a run's points/s and moved its interleaving more than the delays
did. Under the lock, a point without a delay switches workers as rarely as a run
without noise, and the switches are where the delays put them. The detector runs on
one point in ``sample`` (and on every point after a delay): near misses on a
tracker's hot objects come by the thousand, so a sample finds the same pairs.

A fresh target delays at up to 0.9 (``boost`` x ``--noise``): a race that needs two
delays at once (a popped event held back while a whole read goes by) is found
where it is tried nearly every time. What keeps that from slowing a run where delays
do not help is the back-off below and, for the run as a whole, an A/B test over
short epochs (``shmstress.free.epochs``).

Each worker keeps the near-miss detector up to date at its own points, in
small tables in shared memory written without locks: a race in the detector
loses or invents a near miss, which only moves a delay. The tables:

* ``recent``: object slot -> (worker + 1, location code, sequence number) of the
  last access; a point that finds another worker's access there within
  ``window`` points has found a near miss.
* ``targets``: (location, worker) slot -> (code, delays, productive delays, worker,
  passes, violations after a pass, violations after a delay, widest gap). A near miss
  arms only the *earlier* side of the pair, and only in the worker that took it
  (asymmetric: delaying it lets the other worker overtake, the order not yet seen), so
  one side of a pair is slowed, not everyone. Each worker has its own row per location:
  two workers of one role race with each other, and both sides get their turn. The
  first four columns are what a run learnt about the location; the next three are the
  A/B count of the violation signal below; the gap sizes a handoff.
* ``pairs``: the distinct ordered near-miss pairs (a, b): those that armed a target
  and those a delay produced, kept by their location codes so that what a run learnt
  can later be saved.

What makes a delay *productive* is strict, so that delays vanish where they do
not help and stay where they do. "Another worker touched the object during the
delay" is no signal: on a hot object it is true of every delay. A delay counts
when it produced something not seen before: another worker got in at a location
whose order with the delayed one had never been seen that way round (a new
ordered pair: TSVD's overlap, the order flipped). That signal dries up once a
location's pairs have been seen both ways, so delays there back off; they stay
up only where they produce violations: per targeted location, the tables count
the passes followed by a violation (any worker's, within ``credit_window``
points: the delay of one worker often lets another break an invariant), with a
delay and without one; ``passes``, a small ring of the last targeted passes,
tells which came just before a violation (the last at each location only).
Where delays are followed by a violation ``lift`` times as often as passes
without one, the location keeps its full delay probability, whatever its misses.
A race inside a library call, with no point in its window, gets neither signal:
its delays fade to the floor, where they cost next to nothing.

Each unproductive delay lowers the location's delay probability (``delay_probability``:
halved every ``backoff`` misses, a productive delay making up for ``hit_credit``
of them). Location codes are CRC-32s of the labels, stable across processes and runs.

``AimTables.export`` and ``AimTables.preload`` move the targets and pairs (the
learnt part; ``recent`` is only the last few points) out of and into the tables
as plain data, ``Learnt``: how ``shmstress.free.learning`` carries them from one
run to the next.

The gate draws from an RNG of its own, never the worker's: the roles draw
from the worker's RNG, and their choices must not depend on where delays
landed for a free run to replay from its schedule alone. The delays need no
replay: the step lock already makes the recorded order the real one.
"""

from __future__ import annotations

import os
import random
import time
import zlib
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from shmstress.core.access import EVERY, Access
from shmstress.core.control import VIOLATIONS
from shmstress.core.noise import AimStats, NoiseConfig
from shmstress.core.shm import Arena, SharedArray
from shmstress.free.epochs import CELLS as EPOCH_CELLS
from shmstress.free.epochs import Epochs

Subjects = Callable[[str, Mapping[str, object]], tuple[tuple[str, int], ...]]
"""``Words.subjects``: the objects a point's fields name."""
Accesses = Callable[[str, Mapping[str, object]], "tuple[Access, ...] | None"]
"""``Words.accesses``: what the step after a point reads and writes (None: not declared)."""

_R_WORKER, _R_CODE, _R_SEQ, _R_WRITE, _R_STRIDE = 0, 1, 2, 3, 4
_WRITES, _CHECK_ONLY = 1, 2  # an object slot's flags: the step writes it; look, do not record
_T_CODE, _T_TRIES, _T_HITS, _T_WORKER = 0, 1, 2, 3
_T_PASSES, _T_PASS_VIOL, _T_DELAY_VIOL, _T_GAP, _T_STRIDE = 4, 5, 6, 7, 8
_P_KEY, _P_A, _P_B, _P_STRIDE = 0, 1, 2, 3
_G_NEXT, _G_CREDITED, _RING = 0, 1, 2  # passes: the ring's cells, then the ring
_G_SEQ, _G_SLOT, _G_DELAYED, _G_STRIDE = 0, 1, 2, 3
_MOST = 0.9  # a target's highest delay probability: a tenth of passes go by, to compare with
_LOCK_SALT = 0x5DEECE66D  # lock slots and subjects share the object table
_OBJECTS_KEPT = 4096  # (label, fields) whose object slots a worker remembers


@dataclass(frozen=True)
class AimParams:
    """The detector's and the back-off's knobs; the defaults are what the bench measured."""

    window: int = 8  # points: another worker's access at most this far back is a near miss
    object_slots: int = 1024
    location_slots: int = 512
    pair_slots: int = 1024
    backoff: float = 8.0  # unproductive delays that halve a location's delay probability
    hit_credit: int = 4  # unproductive delays one productive delay makes up for
    floor: float = 0.02  # share of the probability kept where violations come without delays
    search_floor: float = 1 / 3  # share kept while no violation says so
    evidence: int = 8  # violations after passes without a delay that say delays are not needed
    boost: float = 9.0  # a fresh target delays with probability min(0.9, boost x --noise)
    lift: float = 2.0  # violations after a delay, over those after a pass, that keep it up
    pass_ring: int = 64  # the last targeted passes kept, to credit a violation to
    credit_window: int = 32  # points: a pass at most this far before a violation is credited
    handoff: bool = False  # a delay waits for the others' points, not for a drawn time
    background: float = 0.0  # x --noise: plain noise at the points no target of its worker
    per_worker: bool = True  # a location is a target per worker, not for the first one only
    handoff_cap: float = 4.0  # x --max-sleep-us: the longest a handoff waits for them
    sample: int = 8  # the detector runs on one point in this many (and after every delay)
    warm_points: int = 2048  # ... but on each of a worker's first points: targets arm sooner
    epoch_ms: float = 50.0  # the run's A/B test of delays on and off (``free.epochs``); 0: none
    control: int = 4  # one epoch in this many is on the other side
    run_evidence: int = 16  # violations before the A/B test may turn delays off


@dataclass(frozen=True)
class LocationRecord:
    """One row of ``targets``: what a run knows of one targeted location."""

    delays: int = 0
    productive: int = 0  # delays that produced an ordered pair not seen before
    passes: int = 0  # passes of the targeted worker without a delay
    pass_violations: int = 0  # ... followed by a violation
    delay_violations: int = 0  # delays followed by a violation
    gap: int = 0  # the widest gap, in points, of the near misses that armed it


def delay_probability(row: LocationRecord, boosted: float, params: AimParams) -> float:
    """How likely the next pass at a targeted location is delayed.

    Delays followed by violations ``lift`` times as often as passes without a delay
    (the passes' rate counted with one violation more, so that a few lucky delays on
    a location rarely passed are not enough) keep the full probability. Otherwise
    each unproductive delay backs off, a productive one making up for ``hit_credit``,
    down to a third of the boosted one: a race whose window needs a rare combination,
    which no delay has hit yet, is still tried there more often than uniform noise
    tries it at any point. Where ``evidence`` violations already followed passes
    without a delay, and delays do no better, the race needs no help (or is out of
    the points' reach, inside a library call): the probability drops at once to the
    low floor, and delays all but vanish. A run where delays do no better as a whole
    turns them off for most of its time (``shmstress.free.epochs``).
    """
    return _probability(row.delays, row.productive, row.passes, row.pass_violations,
                        row.delay_violations, boosted, params)


def _probability(delays: int, productive: int, passes: int, pass_violations: int,
                 delay_violations: int, boosted: float, params: AimParams) -> float:
    """``delay_probability`` on the row's numbers, as the gate reads them at each pass."""
    if delay_violations and (
        delay_violations * (passes + 1) >= params.lift * (pass_violations + 1) * delays
    ):
        return boosted
    if pass_violations >= params.evidence:
        return boosted * params.floor
    misses = delays - params.hit_credit * productive
    if misses <= 0:
        return boosted
    return max(boosted * float(2.0 ** (-misses / params.backoff)),
               boosted * params.search_floor)


def _nothing() -> None:
    return None


def pair_slot(earlier: int, later: int, slots: int) -> int:
    """Where the ordered pair (earlier, later) of location codes goes in ``pairs``, whose
    row ``(earlier << 31) | later, earlier, later`` it is. Not the key's low bits, which are
    ``later``'s: every pair into one location would take one slot."""
    return (hash((earlier, later)) & (slots - 1)) * _P_STRIDE


def target_slot(code: int, worker: int, params: AimParams) -> int:
    """Where location ``code`` armed in ``worker`` (+ 1) goes in ``targets``. Per worker:
    a role that several workers play races with itself, and the first worker armed at a
    location must not keep the others from being slowed there too."""
    salt = worker * 0x9E3779B1 if params.per_worker else 0
    return ((code ^ salt) & (params.location_slots - 1)) * _T_STRIDE


def _credit_passes(ring: memoryview, targets: memoryview, rmask: int, since: int,
                   until: int) -> None:
    """One violation for the last pass at each location in the ring between sequence
    numbers ``since`` and ``until``: on the delayed side or on the passed one."""
    credited: set[int] = set()
    newest = ring[_G_NEXT]
    for index in range(newest - 1, max(newest - rmask - 1, 0) - 1, -1):
        cell = _RING + (index & rmask) * _G_STRIDE
        at = ring[cell + _G_SLOT] - 1
        if at < 0 or not since <= ring[cell + _G_SEQ] <= until or at in credited:
            continue
        credited.add(at)
        targets[at + (_T_DELAY_VIOL if ring[cell + _G_DELAYED] else _T_PASS_VIOL)] += 1


def location_code(label: str) -> int:
    """A label's code in the tables: its CRC-32 (never 0, which marks an empty slot)."""
    return (zlib.crc32(label.encode()) & 0x7FFFFFFF) or 1


@dataclass(frozen=True)
class Learnt:
    """The learnt part of the tables as plain data, to carry to a later run."""

    targets: tuple[tuple[int, int, int, int, int], ...] = ()
    """(location code, delays, productive delays, worker + 1 whose side is slowed,
    violations that followed a delay there)."""
    pairs: tuple[tuple[int, int], ...] = ()
    """(earlier, later) location codes of the near-miss pairs that armed the targets."""


@dataclass
class AimTables:
    """The shared tables of one run, allocated by the coordinator before the fork."""

    params: AimParams
    recent: SharedArray
    targets: SharedArray
    pairs: SharedArray
    passes: SharedArray  # [next index, violations credited, ring of (seq, slot + 1, delayed)]
    epochs: SharedArray  # the A/B test's cells (``free.epochs``)
    preloaded: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    """target slot -> (code, delays, productive delays) as ``preload`` wrote it: what
    ``stats`` does not count as this run's."""
    learnt_pairs: int = 0  # pairs ``preload`` wrote

    @classmethod
    def allocate(cls, arena: Arena, params: AimParams | None = None) -> AimTables:
        p = params or AimParams()
        for n in (p.object_slots, p.location_slots, p.pair_slots, p.pass_ring):
            if n & (n - 1):
                raise ValueError(f"aim table sizes must be powers of two, got {n}")
        return cls(
            p,
            arena.array("harness.aim.recent", p.object_slots * _R_STRIDE),
            arena.array("harness.aim.targets", p.location_slots * _T_STRIDE),
            arena.array("harness.aim.pairs", p.pair_slots * _P_STRIDE),
            arena.array("harness.aim.passes", _RING + p.pass_ring * _G_STRIDE),
            arena.array("harness.aim.epochs", EPOCH_CELLS),
        )

    def row(self, label: str, worker: int = 0) -> LocationRecord | None:
        """The targets row of ``label`` in ``worker``; None when it is not a target."""
        code = location_code(label)
        at = target_slot(code, worker + 1, self.params)
        t = self.targets.mv
        if t[at + _T_CODE] != code or t[at + _T_WORKER] != worker + 1:
            return None
        return LocationRecord(t[at + _T_TRIES], t[at + _T_HITS], t[at + _T_PASSES],
                              t[at + _T_PASS_VIOL], t[at + _T_DELAY_VIOL], t[at + _T_GAP])

    def export(self) -> Learnt:
        """The targets and pairs as they stand (read after the run: the workers are gone)."""
        targets = self.targets.np.reshape(-1, _T_STRIDE)
        pairs = self.pairs.np.reshape(-1, _P_STRIDE)
        armed = targets[targets[:, _T_CODE] != 0]
        kept = pairs[pairs[:, _P_KEY] != 0]
        return Learnt(
            targets=tuple(sorted((int(c), int(t), int(h), int(w), int(v)) for c, t, h, w, v in
                                 armed[:, (_T_CODE, _T_TRIES, _T_HITS, _T_WORKER,
                                           _T_DELAY_VIOL)])),
            pairs=tuple(sorted((int(a), int(b)) for a, b in kept[:, _P_A : _P_B + 1])),
        )

    def preload(self, learnt: Learnt) -> None:
        """Start from what an earlier run learnt (before the fork): its targets and its
        pairs. An entry whose slot is taken by an earlier one of ``learnt`` is dropped, as a
        collision during a run would drop it.

        What a target's history means for the next run depends on whether the earlier
        run knew where its violations came from. Where delays at some targets were
        followed by violations, those targets start fresh, at the full probability that
        found them, and the others keep their back-off: the run aims where the bug was.
        Where no violation followed a delay, the back-off only says how long the earlier
        run went on, not where the bug is, so every target starts fresh, armed from the
        first point: taken as it was saved, the back-off made the next run delay less
        than the first one had, and find its violation later (issue 14's learning
        figure). Whether a delay there was followed by a violation is carried (as one
        violation: evidence of earlier runs must not outweigh this run's own delays for
        ever); the passes start at zero."""
        targets, pairs = self.targets.mv, self.pairs.mv
        pmask = self.params.pair_slots - 1
        aimed = any(violations for *_, violations in learnt.targets)
        for code, saved_tries, saved_hits, worker, violations in learnt.targets:
            at = target_slot(code, worker, self.params)
            if code and not targets[at]:
                fresh = violations or not aimed
                tries, hits = (0, 0) if fresh else (saved_tries, saved_hits)
                row = (code, tries, hits, worker, 0, 0, min(violations, 1)) + (0,) * (
                    _T_STRIDE - _T_DELAY_VIOL - 1)
                targets[at : at + _T_STRIDE] = array("q", row)
                self.preloaded[at] = (code, tries, hits)
        for earlier, later in learnt.pairs:
            key = (earlier << 31) | later
            slot = pair_slot(earlier, later, pmask + 1)
            if key and not pairs[slot]:
                pairs[slot : slot + _P_STRIDE] = array("q", (key, earlier, later))
                self.learnt_pairs += 1

    def settle(self, seqs: Sequence[int]) -> None:
        """Credit the violations no worker lived to see (read after the run: the workers
        are gone). ``seqs``: the sequence numbers of the violations reported online. A run
        that stops at its first violation ends before any worker's next point, where the
        credit is given, and what it saved then never said where the violation came from."""
        ring = self.passes.mv
        for seq in sorted(seqs)[ring[_G_CREDITED]:]:
            _credit_passes(ring, self.targets.mv, self.params.pass_ring - 1,
                           seq - self.params.credit_window, seq)
        ring[_G_CREDITED] = max(ring[_G_CREDITED], len(seqs))

    def stats(self) -> AimStats:
        targets = self.targets.np.reshape(-1, _T_STRIDE)
        pairs = self.pairs.np.reshape(-1, _P_STRIDE)
        armed = targets[targets[:, _T_CODE] != 0]
        kept = pairs[pairs[:, _P_KEY] != 0]
        before = [0, 0]  # the preloaded delays still in the table: not this run's
        for at, (code, tries, hits) in self.preloaded.items():
            if self.targets.mv[at] == code:
                before[0] += min(tries, self.targets.mv[at + 1])
                before[1] += min(hits, self.targets.mv[at + 2])
        return AimStats(
            targeted_locations=len(armed),
            targeted_pairs=len(kept),
            learnt_pairs=self.learnt_pairs,
            delays=int(armed[:, _T_TRIES].sum()) - before[0],
            productive_delays=int(armed[:, _T_HITS].sum()) - before[1],
            pairs=tuple(sorted((int(a), int(b)) for a, b in kept[:, _P_A : _P_B + 1])),
            locations=tuple(sorted(
                (int(code), int(tries), int(hits))
                for code, tries, hits in armed[:, _T_CODE : _T_HITS + 1])),
            violation_delays=int(armed[:, _T_DELAY_VIOL].sum()),
        )


class AimedGate:
    """One worker's side: the gate before each point and the observer after it.

    ``after_point`` runs at every point, under the step lock, and only notes it; the next
    ``before_point``, with the lock let go, runs the detector on it (one table slot per
    object the point names) and, at a targeted location, decides on a delay.
    """

    def __init__(
        self,
        tables: AimTables,
        config: NoiseConfig,
        subjects: Subjects,
        seed: int,
        worker: int,
        seq_cell: memoryview,
        act: bool = True,
        accesses: Accesses | None = None,
        let_go: Callable[[], None] | None = None,
    ) -> None:
        """``accesses``: the tracker's ``Words.accesses``; where a point declares them, a
        near miss needs one of the two accesses to write (TSVD's rule, exact), and a scan
        of every object of a kind (``EVERY``) meets each single one of it. ``seq_cell`` is
        the control block: ``[0]`` the next sequence number to be handed out (where a
        delay starts, so that an access after it tells what the delay let in),
        ``[VIOLATIONS]`` the violations reported so far. ``let_go``: the runtime's
        ``end_step``, when the gate runs under the step lock (``Runtime.gate_holds``): it
        lets go before a delay only, so that a point without one is not a chance for
        another worker to take the lock (a handoff at nearly every point halved the
        points/s of a run, and changed its interleaving more than the delays did)."""
        params = tables.params
        self._params = params
        self._recent = tables.recent.mv
        self._targets = tables.targets.mv
        self._pairs = tables.pairs.mv
        self._omask = params.object_slots - 1
        self._lmask = params.location_slots - 1
        self._salt = (worker + 1) * 0x9E3779B1 if params.per_worker else 0  # ``target_slot``
        self._pmask = params.pair_slots - 1
        self._window = params.window
        self._boosted = min(_MOST, config.probability * params.boost)
        self._sleep = "sleep" in config.kinds
        self._yield = "yield" in config.kinds
        self._max_sleep_s = config.max_sleep_us / 1e6
        self._handoff = params.handoff
        self._background = config.probability * params.background
        self._cap_s = self._max_sleep_s * params.handoff_cap
        self._sampled = 1.0 / params.sample if params.sample > 1 else 0.0
        self._draw = random.Random(f"shmstress:aim-sample:{seed}:{worker}").random
        self._warm = params.warm_points
        self._slice_s = min(self._max_sleep_s / 4, 25e-6)  # how often a handoff looks
        self._subjects = subjects
        self._accesses = accesses
        self._rng = random.Random(f"shmstress:aim:{seed}:{worker}")
        self._act = act
        self._let_go = let_go or _nothing
        self._epochs = (Epochs(tables.epochs, params.epoch_ms, params.control,
                               params.run_evidence) if params.epoch_ms > 0 else None)
        self._me = worker + 1
        self._seq = seq_cell
        self._codes: dict[str, int] = {}
        self._seen: set[tuple[int, int]] = set()  # (pair key, worker) already armed here
        self._lock = -1  # the instrumented lock whose acquire the coming point is
        self._delayed = -1  # target slot of the delay before the coming point, or -1
        self._mark = 0  # the sequence number when the last delay started
        # this worker's last targeted passes: (target slot, delayed), and the violations
        # reported when it last let go of a point: one more at its next point is its own
        self._ring = tables.passes.mv
        self._rmask = params.pass_ring - 1
        # the point noted under the step lock, for the detector to run on once let go
        self._pending: tuple[int, str, dict[str, object], int, int, int] | None = None
        self._objects: dict[tuple[object, ...], tuple[tuple[int, int], ...]] = {}

    def _code(self, label: str) -> int:
        code = self._codes.get(label)
        if code is None:
            code = self._codes[label] = location_code(label)
        return code

    # -- before the point: score the last passes, maybe delay -------------------------------
    def before_point(self, label: str) -> None:
        violations = self._seq[VIOLATIONS]
        if violations != self._ring[_G_CREDITED]:
            self._credit(violations)
        if self._pending is not None:
            self.flush()
        if self._epochs is not None and not self._epochs.delays_on(time.monotonic_ns(),
                                                                    violations):
            return  # an epoch with delays off: the run's A/B test (``free.epochs``)
        code = self._code(label)
        at = ((code ^ self._salt) & self._lmask) * _T_STRIDE
        targets = self._targets
        if targets[at] != code or targets[at + _T_WORKER] != self._me:
            if self._background and self._rng.random() < self._background:
                self._pause(self._rng)
            return
        p = _probability(targets[at + _T_TRIES], targets[at + _T_HITS],
                         targets[at + _T_PASSES], targets[at + _T_PASS_VIOL],
                         targets[at + _T_DELAY_VIOL], self._boosted, self._params)
        rng = self._rng
        if rng.random() >= p:
            targets[at + _T_PASSES] += 1
            self._remember(at, 0)
            return
        targets[at + _T_TRIES] += 1
        self._remember(at, 1)
        self._delayed = at
        self._mark = self._seq[0]
        if self._handoff:
            self._hand_off(rng, targets[at + _T_GAP])
        else:
            self._pause(rng)

    def _remember(self, at: int, delayed: int) -> None:
        """Put a targeted pass in the ring (two workers may take one cell: a pass lost)."""
        ring = self._ring
        index = ring[_G_NEXT]
        ring[_G_NEXT] = index + 1
        cell = _RING + (index & self._rmask) * _G_STRIDE
        ring[cell + _G_SEQ] = self._seq[0]
        ring[cell + _G_SLOT] = at + 1
        ring[cell + _G_DELAYED] = delayed

    def _credit(self, violations: int) -> None:
        """A violation was reported since this worker's last point (or several were): the
        last pass at each location in the ring within ``credit_window`` points counts one
        violation after it, on the delayed side or on the passed one. The first worker
        to see it credits it; two seeing it at once credit it twice, which is rare."""
        self._ring[_G_CREDITED] = violations
        now = self._seq[0]
        _credit_passes(self._ring, self._targets, self._rmask,
                       now - self._params.credit_window, now)

    def _pause(self, rng: random.Random) -> None:
        """Yield or sleep as the noise kinds say (draws alike when not acting: a replay)."""
        if self._sleep and (not self._yield or rng.random() < 0.5):
            pause = rng.random() * self._max_sleep_s
            if self._act:
                self._let_go()
                time.sleep(pause)
        elif self._act:
            self._let_go()
            os.sched_yield()

    def _hand_off(self, rng: random.Random, gap: int) -> None:
        """Wait until the other workers have made a drawn number of points, at most the
        gap seen between the pair's two accesses (plus one), or until the cap: the step
        lock is let go, so the delay lasts exactly as long as it takes the later side to
        get in, on an idle machine or a loaded one, where a drawn sleep is too short for a
        woken worker to take the lock (or far longer than it needed)."""
        need = rng.randint(1, max(gap, 1) + 1)
        if not self._act:
            return
        self._let_go()
        cell = self._seq
        start = cell[0]
        deadline = time.monotonic() + self._cap_s
        while cell[0] - start < need and time.monotonic() < deadline:
            if self._sleep:
                time.sleep(self._slice_s)
            else:
                os.sched_yield()

    def before_acquire(self, label: str, lock: int) -> None:
        """The outer acquire of instrumented lock ``lock``: the lock is one of its objects."""
        self._lock = lock
        self.before_point(label)

    # -- after the point: note it; detect near misses and score the delay once let go -------
    def after_point(self, seq: int, worker: int, label: str, fields: dict[str, object]) -> None:
        """The runtime's observer. It runs under the step lock and only notes the point,
        one in ``AimParams.sample`` (every point that followed a delay): the detector runs
        on it at this worker's next ``before_point``, still under the step lock in a free
        run (``Runtime.gate_holds``). Sampling is enough to find near misses, which on a
        tracker's hot objects come by the thousand, and it keeps the detector's cost,
        paid while the others wait, to a few percent of a point's."""
        if self._delayed < 0 and self._sampled:
            if self._warm:
                self._warm -= 1  # its first points all count: the targets arm at once
            elif self._draw() >= self._sampled:
                self._lock = -1  # not sampled: the detector skips it (``AimParams.sample``)
                return
        self._note(seq, label, fields)

    def _note(self, seq: int, label: str, fields: dict[str, object]) -> None:
        self._pending = (seq, label, fields, self._delayed, self._mark, self._lock)
        self._delayed = -1
        self._lock = -1

    def observe(self, seq: int, worker: int, label: str, fields: dict[str, object]) -> None:
        """Note the point and run the detector on it at once (a sequential driver): every
        point, not a sample."""
        self._note(seq, label, fields)
        self.flush()

    def flush(self) -> None:
        """Run the detector on the point noted last, if it has not run yet."""
        pending, self._pending = self._pending, None
        if pending is not None:
            self._detect(*pending)

    def _detect(self, seq: int, label: str, fields: dict[str, object], delayed: int, mark: int,
                lock: int) -> None:
        """Near misses on each object the point touched, and whether its delay (if it had
        one) let another worker in at an order not seen before. Another worker's access
        with a later sequence number may already be in the table (its detector ran first):
        it stays, so that the table keeps the last access."""
        code = self._code(label)
        me = self._me
        slots = self._slots(label, fields) if fields or self._accesses else ()
        if lock >= 0:
            slots = (*slots, (((lock ^ _LOCK_SALT) & self._omask) * _R_STRIDE, _WRITES))
        recent = self._recent
        window = self._window
        new_order = False
        for at, flags in slots:
            other = recent[at]
            then = recent[at + 2]
            if other and other != me:
                if delayed >= 0 and mark <= then < seq and not new_order:
                    # another worker got in during the delay: a new order, or nothing new
                    new_order = self._note_pair(recent[at + 1], code)
                if 0 <= seq - then <= window and (flags & _WRITES or recent[at + 3]):
                    self._near_miss(other, recent[at + 1], code, seq - then)
            if not flags & _CHECK_ONLY and (seq > then or not other):
                recent[at] = me
                recent[at + 1] = code
                recent[at + 2] = seq
                recent[at + 3] = flags & _WRITES
        if new_order:
            self._targets[delayed + _T_HITS] += 1

    def _slots(self, label: str, fields: dict[str, object]) -> tuple[tuple[int, int], ...]:
        """The ``recent`` slots of the objects the point touches, with their flags,
        remembered per label and fields: a tracker's points name few distinct objects, and
        working them out is the costliest part of the detector."""
        key = (label, *fields.items())
        try:
            slots = self._objects.get(key)
        except TypeError:  # a field holds a list: no key, work it out each time
            return self._work_out(label, fields)
        if slots is None:
            if len(self._objects) >= _OBJECTS_KEPT:
                self._objects.clear()
            slots = self._objects[key] = self._work_out(label, fields)
        return slots

    def _work_out(self, label: str, fields: dict[str, object]) -> tuple[tuple[int, int], ...]:
        """Declared accesses, each with whether it writes; a single object also looks at
        its kind's ``EVERY`` slot (a scan) without recording there. Undeclared: the
        objects the fields name, each taken as written (it may be)."""
        mask = self._omask
        declared = self._accesses(label, fields) if self._accesses is not None else None
        if declared is None:
            return tuple(((hash(s) & mask) * _R_STRIDE, _WRITES)
                         for s in self._subjects(label, fields))
        slots: list[tuple[int, int]] = []
        for access in declared:
            flags = _WRITES if access.write else 0
            slots.append(((hash((access.kind, access.id)) & mask) * _R_STRIDE, flags))
            if access.id != EVERY:
                slots.append(((hash((access.kind, EVERY)) & mask) * _R_STRIDE,
                              flags | _CHECK_ONLY))
        return tuple(slots)

    def _note_pair(self, earlier: int, later: int) -> bool:
        """Put the ordered pair in ``pairs``; True if it was not there (a new order)."""
        key = (earlier << 31) | later
        slot = pair_slot(earlier, later, self._pmask + 1)
        pairs = self._pairs
        if pairs[slot] == key:
            return False
        pairs[slot + 1] = earlier
        pairs[slot + 2] = later
        pairs[slot] = key
        return True

    def _near_miss(self, worker: int, earlier: int, later: int, gap: int) -> None:
        """Arm the earlier side of the pair in the worker that took it (``worker`` + 1), and
        note the pair once per worker. ``gap``: points from the earlier access to the later;
        a handoff at the target waits for up to the widest gap of its pairs."""
        key = (earlier << 31) | later
        if (key, worker) in self._seen:
            return
        self._seen.add((key, worker))
        targets = self._targets
        at = target_slot(earlier, worker, self._params)
        if targets[at] != earlier or targets[at + _T_WORKER] != worker:
            for column in range(1, _T_STRIDE):
                targets[at + column] = 0
            targets[at + _T_WORKER] = worker
            targets[at] = earlier
        targets[at + _T_GAP] = max(targets[at + _T_GAP], gap)
        self._note_pair(earlier, later)
