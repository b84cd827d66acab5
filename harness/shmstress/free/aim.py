"""Aimed noise: delay where races can happen, learnt while the run goes (TSVD-style).

Uniform noise slows every worker alike at every point, which mostly shifts the
whole run in time. TSVD (Li et al., SOSP 2019) instead watches for *near
misses*: two workers touching the same object from two program locations
within a short window. Such a pair is where a delay can flip the order of the
two accesses, so the delays go there and only there.

Here an object is whatever a point's fields name, as the tracker's
``Words.subjects`` says, plus the instrumented lock whose acquire the point is.
Points do not say whether they read or write, so any two accesses to one
object by two different workers count as potentially conflicting (TSVD
requires one write; we cannot tell, and an extra target only costs a few
delays before back-off silences it).

Each worker keeps the near-miss detector up to date at its own points, in
small tables in shared memory written without locks: a race in the detector
loses or invents a near miss, which only moves a delay. The tables:

* ``recent``: object slot -> (worker + 1, location code, sequence number) of the
  last access; a point that finds another worker's access there within
  ``window`` points has found a near miss.
* ``targets``: location slot -> (code, delays, productive delays, worker). A
  near miss arms only the *earlier* side of the pair, and only in the worker
  that took it (asymmetric: delaying it lets the other worker overtake, the
  order not yet seen), so one side of a pair is slowed, not everyone.
* ``pairs``: the distinct near-miss pairs (a, b) that armed a target, kept by
  their location codes so that what a run learnt can later be saved.

``AimTables.export`` and ``AimTables.preload`` move the targets and pairs (the
learnt part; ``recent`` is only the last few points) out of and into the tables
as plain data, ``Learnt``: how ``shmstress.free.learning`` carries them from one
run to the next.

A delay is *productive* when, during it, another worker touched one of the
objects the delayed point touches: the delay opened the window it aimed at.
Each unproductive delay lowers the location's delay probability (back-off);
productive ones keep it up. Location codes are CRC-32s of the labels, stable
across processes and runs.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from shmstress.core.noise import AimStats, NoiseConfig
from shmstress.core.shm import Arena, SharedArray

Subjects = Callable[[str, Mapping[str, object]], tuple[tuple[str, int], ...]]
"""``Words.subjects``: the objects a point's fields name."""

_R_WORKER, _R_CODE, _R_SEQ, _R_STRIDE = 0, 1, 2, 3
_T_CODE, _T_TRIES, _T_HITS, _T_WORKER, _T_STRIDE = 0, 1, 2, 3, 4
_P_KEY, _P_A, _P_B, _P_STRIDE = 0, 1, 2, 3
_LOCK_SALT = 0x5DEECE66D  # lock slots and subjects share the object table


@dataclass(frozen=True)
class AimParams:
    """The detector's and the back-off's knobs; the defaults are what the bench measured."""

    window: int = 8  # points: another worker's access at most this far back is a near miss
    object_slots: int = 1024
    location_slots: int = 512
    pair_slots: int = 1024
    backoff: float = 8.0  # unproductive delays that halve a location's delay probability
    hit_credit: int = 4  # unproductive delays one productive delay makes up for
    floor: float = 0.02  # share of the probability a silenced location keeps
    boost: float = 3.0  # a fresh target delays with probability min(1, boost x --noise)


def location_code(label: str) -> int:
    """A label's code in the tables: its CRC-32 (never 0, which marks an empty slot)."""
    return (zlib.crc32(label.encode()) & 0x7FFFFFFF) or 1


@dataclass(frozen=True)
class Learnt:
    """The learnt part of the tables as plain data, to carry to a later run."""

    targets: tuple[tuple[int, int, int, int], ...] = ()
    """(location code, delays, productive delays, worker + 1 whose side is slowed)."""
    pairs: tuple[tuple[int, int], ...] = ()
    """(earlier, later) location codes of the near-miss pairs that armed the targets."""


@dataclass
class AimTables:
    """The shared tables of one run, allocated by the coordinator before the fork."""

    params: AimParams
    recent: SharedArray
    targets: SharedArray
    pairs: SharedArray
    preloaded: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    """target slot -> (code, delays, productive delays) as ``preload`` wrote it: what
    ``stats`` does not count as this run's."""
    learnt_pairs: int = 0  # pairs ``preload`` wrote

    @classmethod
    def allocate(cls, arena: Arena, params: AimParams | None = None) -> AimTables:
        p = params or AimParams()
        for n in (p.object_slots, p.location_slots, p.pair_slots):
            if n & (n - 1):
                raise ValueError(f"aim table sizes must be powers of two, got {n}")
        return cls(
            p,
            arena.array("harness.aim.recent", p.object_slots * _R_STRIDE),
            arena.array("harness.aim.targets", p.location_slots * _T_STRIDE),
            arena.array("harness.aim.pairs", p.pair_slots * _P_STRIDE),
        )

    def export(self) -> Learnt:
        """The targets and pairs as they stand (read after the run: the workers are gone)."""
        targets = self.targets.np.reshape(-1, _T_STRIDE)
        pairs = self.pairs.np.reshape(-1, _P_STRIDE)
        armed = targets[targets[:, _T_CODE] != 0]
        kept = pairs[pairs[:, _P_KEY] != 0]
        return Learnt(
            targets=tuple(sorted((int(c), int(t), int(h), int(w)) for c, t, h, w in armed)),
            pairs=tuple(sorted((int(a), int(b)) for a, b in kept[:, _P_A : _P_B + 1])),
        )

    def preload(self, learnt: Learnt) -> None:
        """Start from what an earlier run learnt (before the fork): its targets, with their
        yield so far, and its pairs. An entry whose slot is taken by an earlier one of
        ``learnt`` is dropped, as a collision during a run would drop it."""
        targets, pairs = self.targets.mv, self.pairs.mv
        lmask, pmask = self.params.location_slots - 1, self.params.pair_slots - 1
        for code, tries, hits, worker in learnt.targets:
            at = (code & lmask) * _T_STRIDE
            if code and not targets[at]:
                targets[at : at + _T_STRIDE] = array("q", (code, tries, hits, worker))
                self.preloaded[at] = (code, tries, hits)
        for earlier, later in learnt.pairs:
            key = (earlier << 31) | later
            slot = (hash(key) & pmask) * _P_STRIDE
            if key and not pairs[slot]:
                pairs[slot : slot + _P_STRIDE] = array("q", (key, earlier, later))
                self.learnt_pairs += 1

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
        )


class AimedGate:
    """One worker's side: the gate before each point and the observer after it.

    ``before_point`` is the only cost at an untargeted location (a dict lookup
    and a compare); ``observe`` runs at every point and touches one table slot
    per object the point names.
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
    ) -> None:
        """``seq_cell[0]`` is the next sequence number to be handed out (the control block's
        counter): where a delay starts, so that an access after it tells a productive one."""
        params = tables.params
        self._recent = tables.recent.mv
        self._targets = tables.targets.mv
        self._pairs = tables.pairs.mv
        self._omask = params.object_slots - 1
        self._lmask = params.location_slots - 1
        self._pmask = params.pair_slots - 1
        self._window = params.window
        self._backoff = params.backoff
        self._credit = params.hit_credit
        self._boosted = min(1.0, config.probability * params.boost)
        self._floor = self._boosted * params.floor
        self._sleep = "sleep" in config.kinds
        self._yield = "yield" in config.kinds
        self._max_sleep_s = config.max_sleep_us / 1e6
        self._subjects = subjects
        self._rng = random.Random(f"shmstress:aim:{seed}:{worker}")
        self._act = act
        self._me = worker + 1
        self._seq = seq_cell
        self._codes: dict[str, int] = {}
        self._seen: set[int] = set()  # pair keys this worker already put in the table
        self._lock = -1  # the instrumented lock whose acquire the coming point is
        self._delayed = -1  # target slot of the delay before the coming point, or -1
        self._mark = 0  # the sequence number when the last delay started

    def _code(self, label: str) -> int:
        code = self._codes.get(label)
        if code is None:
            code = self._codes[label] = location_code(label)
        return code

    # -- before the point: maybe delay ------------------------------------------------------
    def before_point(self, label: str) -> None:
        code = self._code(label)
        at = (code & self._lmask) * _T_STRIDE
        targets = self._targets
        if targets[at] != code or targets[at + 3] != self._me:
            return
        rng = self._rng
        tries = targets[at + 1]
        misses = tries - self._credit * targets[at + 2]
        p = self._boosted if misses <= 0 else self._boosted * 2.0 ** (-misses / self._backoff)
        if rng.random() >= max(p, self._floor):
            return
        targets[at + 1] = tries + 1
        self._delayed = at
        self._mark = self._seq[0]
        self._pause(rng)

    def _pause(self, rng: random.Random) -> None:
        """Yield or sleep as the noise kinds say (draws alike when not acting: a replay)."""
        if self._sleep and (not self._yield or rng.random() < 0.5):
            pause = rng.random() * self._max_sleep_s
            if self._act:
                time.sleep(pause)
        elif self._act:
            os.sched_yield()

    def before_acquire(self, label: str, lock: int) -> None:
        """The outer acquire of instrumented lock ``lock``: the lock is one of its objects."""
        self._lock = lock
        self.before_point(label)

    # -- after the point: detect near misses, score the delay -------------------------------
    def observe(self, seq: int, worker: int, label: str, fields: dict[str, object]) -> None:
        code = self._code(label)
        me = worker + 1
        delayed, self._delayed = self._delayed, -1
        mark = self._mark if delayed >= 0 else seq
        lock, self._lock = self._lock, -1
        keys: list[int] = [hash(s) for s in self._subjects(label, fields)] if fields else []
        if lock >= 0:
            keys.append(lock ^ _LOCK_SALT)
        recent = self._recent
        window = self._window
        hit = False
        for key in keys:
            at = (key & self._omask) * _R_STRIDE
            other = recent[at]
            if other and other != me:
                then = recent[at + 2]
                if seq - then <= window:
                    self._near_miss(other, recent[at + 1], code)
                if then >= mark and not hit and delayed >= 0:
                    hit = self._flipped(delayed, recent[at + 1])
            recent[at] = me
            recent[at + 1] = code
            recent[at + 2] = seq
        if hit and delayed >= 0:
            self._targets[delayed + 2] += 1

    def _flipped(self, target: int, other: int) -> bool:
        """Whether the delay at ``target`` let another worker in at a location it was seen
        to race with: the near miss (target, other) happened the other way round."""
        earlier = self._targets[target]
        key = (earlier << 31) | other
        return bool(self._pairs[(hash(key) & self._pmask) * _P_STRIDE] == key)

    def _near_miss(self, worker: int, earlier: int, later: int) -> None:
        """Arm the earlier side of the pair in the worker that took it (``worker`` + 1), and
        note the pair once per worker."""
        key = (earlier << 31) | later
        if key in self._seen:
            return
        self._seen.add(key)
        targets = self._targets
        at = (earlier & self._lmask) * _T_STRIDE
        if targets[at] != earlier:
            targets[at + 1] = 0
            targets[at + 2] = 0
            targets[at + 3] = worker
            targets[at] = earlier
        slot = (hash(key) & self._pmask) * _P_STRIDE
        pairs = self._pairs
        if pairs[slot] != key:
            pairs[slot + 1] = earlier
            pairs[slot + 2] = later
            pairs[slot] = key
